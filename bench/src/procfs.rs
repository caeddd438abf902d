//! What Linux's `/proc` says about a process tree: CPU time, write syscalls, peak memory.
//!
//! Every reader returns `None` where `/proc` is missing or unreadable (another OS, a process
//! that is gone), so that a harness reports "not measured" instead of failing.

use std::collections::HashMap;
use std::process::Command;
use std::sync::OnceLock;

/// What a process tree has consumed so far.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    /// CPU seconds in user space.
    pub user: f64,
    /// CPU seconds in the kernel.
    pub system: f64,
    /// Write syscalls (`syscw` of `/proc/<pid>/io`: `write`, `writev`, `pwrite64`… to sockets
    /// and files alike; `sendto`/`sendmsg` are not counted), `None` when unreadable.
    pub writes: Option<u64>,
}

impl Usage {
    /// What was consumed between `before` and `self`.
    pub fn since(self, before: Usage) -> Usage {
        Usage {
            user: self.user - before.user,
            system: self.system - before.system,
            writes: self
                .writes
                .zip(before.writes)
                .map(|(after, before)| after.saturating_sub(before)),
        }
    }

    /// User plus system CPU seconds.
    pub fn cpu(self) -> f64 {
        self.user + self.system
    }
}

/// CPU time and write syscalls of `pid` and its live descendants. CPU time includes the
/// children they have reaped (`cutime`, `cstime`); write counts are of live processes only.
/// `None` when `pid` itself cannot be read.
pub fn tree_usage(pid: u32) -> Option<Usage> {
    let ticks_per_second = clock_ticks_per_second();
    let mut usage = Usage {
        writes: Some(0),
        ..Usage::default()
    };
    for (index, member) in process_tree(pid).into_iter().enumerate() {
        let Some(fields) = stat_fields(member) else {
            if index == 0 {
                return None;
            }
            continue;
        };
        // utime, stime, cutime, cstime are fields 14 to 17 of the line: 11 to 14 here.
        let ticks = |field: usize| fields.get(field)?.parse::<f64>().ok();
        usage.user += (ticks(11)? + ticks(13)?) / ticks_per_second;
        usage.system += (ticks(12)? + ticks(14)?) / ticks_per_second;
        usage.writes = usage.writes.zip(write_syscalls(member)).map(|(a, b)| a + b);
    }
    Some(usage)
}

/// User plus system CPU seconds of this process, its threads included.
pub fn own_cpu_seconds() -> Option<f64> {
    let fields = stat_fields(std::process::id())?;
    let ticks = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / clock_ticks_per_second())
}

/// The sum of `VmHWM` (peak resident set) over the process tree of `pid`, in KiB.
pub fn tree_peak_rss_kib(pid: u32) -> Option<u64> {
    let mut total = 0;
    for (index, member) in process_tree(pid).into_iter().enumerate() {
        let status = std::fs::read_to_string(format!("/proc/{member}/status"));
        let peak = status.ok().and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmHWM:"))
                .and_then(|value| {
                    value
                        .trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
        });
        match peak {
            Some(kib) => total += kib,
            None if index == 0 => return None,
            None => {}
        }
    }
    Some(total)
}

/// `pid` and all its live descendants, parents before children.
pub fn process_tree(pid: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(child) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            // ppid is field 4 of the line.
            if let Some(parent) =
                stat_fields(child).and_then(|fields| fields.get(1)?.parse::<u32>().ok())
            {
                children.entry(parent).or_default().push(child);
            }
        }
    }
    let mut tree = vec![pid];
    let mut next = 0;
    while next < tree.len() {
        if let Some(kids) = children.get(&tree[next]) {
            tree.extend(kids);
        }
        next += 1;
    }
    tree
}

/// Whether `pid` has exited (it is gone, or a zombie waiting to be reaped).
pub fn has_exited(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => true,
    }
}

/// The fields of `/proc/<pid>/stat` after the command name (which may hold spaces and
/// parentheses): field 3 of the line is index 0 here.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(
        stat.rsplit_once(')')?
            .1
            .split_whitespace()
            .map(str::to_owned)
            .collect(),
    )
}

/// `syscw` of `/proc/<pid>/io`: the write syscalls of every thread of the process, live or
/// exited.
fn write_syscalls(pid: u32) -> Option<u64> {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    io.lines()
        .find_map(|line| line.strip_prefix("syscw:"))
        .and_then(|value| value.trim().parse::<u64>().ok())
}

/// The kernel's clock ticks per second (`getconf CLK_TCK`, asked once; 100 if that fails).
fn clock_ticks_per_second() -> f64 {
    static TICKS: OnceLock<f64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .and_then(|text| text.trim().parse::<f64>().ok())
            .unwrap_or(100.0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_has_cpu_time_and_writes() {
        let usage = tree_usage(std::process::id()).expect("this process is in /proc");
        assert!(usage.cpu() >= 0.0);
        assert!(usage.writes.is_some());
        assert!(!has_exited(std::process::id()));
    }
}
