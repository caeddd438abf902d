//! A server-sent events reader for the client: `event:` and `data:` lines, an event per blank
//! line, whatever the reads' boundaries.

#[derive(Default)]
pub(crate) struct SseReader {
    buffer: Vec<u8>,
    event: String,
    data: String,
}

impl SseReader {
    pub(crate) fn push(&mut self, bytes: &[u8], mut on_event: impl FnMut(&str, &str)) {
        self.buffer.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(end) = self.buffer[start..].iter().position(|b| *b == b'\n') {
            let mut line = &self.buffer[start..start + end];
            start += end + 1;
            if let [rest @ .., b'\r'] = line {
                line = rest;
            }
            if line.is_empty() {
                if !self.data.is_empty() || !self.event.is_empty() {
                    on_event(&self.event, &self.data);
                }
                self.event.clear();
                self.data.clear();
                continue;
            }
            let line = String::from_utf8_lossy(line);
            let (field, value) = line.split_once(':').unwrap_or((&line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "data" => {
                    if !self.data.is_empty() {
                        self.data.push('\n');
                    }
                    self.data.push_str(value);
                }
                "event" => {
                    self.event.clear();
                    self.event.push_str(value);
                }
                _ => {}
            }
        }
        self.buffer.drain(..start);
    }
}
