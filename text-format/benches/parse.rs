//! Parsing a 100 KB model output with each format.
//!
//! The output is a long ReAct reply: prose before the first section, a `thinking` section with
//! paragraphs, inline tags and fenced code (which parsing must skip), many `action` sections and a
//! final `answer`, repeated until it reaches 100 KB.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use text_format::{FormattedSection, MarkdownFormat, TextFormat, TextSection, XmlFormat};

const TARGET_LEN: usize = 100 * 1024;

fn register<F: TextFormat>(mut format: F) -> F {
    for name in ["thinking", "action", "answer"] {
        format.register_section(TextSection::new(name, "…").unwrap());
    }
    format
}

/// A 100 KB reply written in `format`'s own convention.
fn reply(format: &dyn TextFormat) -> String {
    let thinking = "The customer asked about flight AA100. I should look up their record first, \
                    then the flight. The tool returns JSON like `<answer>` examples do not count.\n\
                    ```json\n{\"note\": \"# not a heading\", \"tag\": \"<action>\"}\n```\n\
                    Next I will call the tools in parallel.";
    let action = r#"[{"tool": "get_customer_info", "args": {"id": "C001"}}, {"tool": "get_flight_info", "args": {"flight": "AA100"}}]"#;
    let mut sections = Vec::new();
    let mut len = 0;
    while len < TARGET_LEN {
        for (name, content) in [("thinking", thinking), ("action", action)] {
            len += content.len() + 2 * name.len() + 8;
            sections.push(FormattedSection::new(name, content));
        }
    }
    sections.push(FormattedSection::new("answer", "Flight AA100 is on time."));
    let body: Vec<String> = sections
        .iter()
        .map(|section| format.format_section(&section.name, &section.content))
        .collect();
    format!("Sure, let me help with that.\n\n{}", body.join("\n\n"))
}

fn parse(c: &mut Criterion) {
    let formats: [(&str, Box<dyn TextFormat>); 2] = [
        ("markdown", Box::new(register(MarkdownFormat::new()))),
        ("xml", Box::new(register(XmlFormat::new()))),
    ];
    let mut group = c.benchmark_group("parse_100kb");
    for (name, format) in &formats {
        let output = reply(format.as_ref());
        let sections = format.parse(&output).unwrap().len();
        assert!(sections > 500, "{name}: {sections} sections");
        group.throughput(Throughput::Bytes(output.len() as u64));
        group.bench_function(*name, |b| {
            b.iter(|| format.parse(black_box(&output)).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
