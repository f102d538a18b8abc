//! Memory use of this process, from `/proc/self/status` (Linux).

use std::fs;

/// Peak resident set size (`VmHWM`) in bytes, if the platform reports it.
pub fn peak_rss_bytes() -> Option<u64> {
    status_kb("VmHWM:").map(|kb| kb * 1024)
}

/// Current resident set size (`VmRSS`) in bytes, if the platform reports it.
pub fn current_rss_bytes() -> Option<u64> {
    status_kb("VmRSS:").map(|kb| kb * 1024)
}

fn status_kb(field: &str) -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let value = line.strip_prefix(field)?.trim().strip_suffix("kB")?.trim();
    value.parse().ok()
}

/// Bytes as mebibytes.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}
