//! Keeps the load generator working without timing anything: 20 runs of 20 tokens against the
//! real `agentwire serve`, every token of every run delivered, and a report that says so.
#![allow(clippy::unwrap_used)]

mod common;

use std::process::Command;

use common::agentwire;

#[test]
fn every_token_of_every_run_arrives_and_the_report_says_so() {
    let output = Command::new(env!("CARGO_BIN_EXE_agentwire-load"))
        .args([
            "--runs",
            "20",
            "--tokens",
            "20",
            "--rate",
            "200",
            "--ramp-ms",
            "100",
        ])
        .arg("--agentwire")
        .arg(agentwire())
        .arg("--json")
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.starts_with("| runs | tokens × rate |"), "{stdout}");
    let json = stdout.lines().last().unwrap();
    let report: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(report["runs"], 20);
    assert_eq!(report["complete_runs"], 20);
    assert_eq!(report["deltas"], 400);
    assert_eq!(report["errors"], serde_json::json!({}));
    for key in ["delivered_tokens_per_s", "memory_per_run", "server_cpu_s"] {
        assert!(
            report[key].as_f64().is_some_and(|value| value > 0.0),
            "{key}: {json}"
        );
    }
    for key in ["p50_ms", "p99_ms", "max_ms"] {
        let added = report["added_latency"][key].as_f64().unwrap();
        assert!(added >= 0.0 && added.is_finite(), "{key}: {json}");
    }
}

#[test]
fn a_server_that_is_not_there_is_an_error_per_run_not_a_hang() {
    // Nothing listens on port 9 (discard) of loopback here; every run fails to connect.
    let output = Command::new(env!("CARGO_BIN_EXE_agentwire-load"))
        .args([
            "--runs",
            "3",
            "--tokens",
            "5",
            "--rate",
            "100",
            "--ramp-ms",
            "0",
        ])
        .args(["--server", "127.0.0.1:9", "--json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(!output.status.success(), "{stdout}");
    let report: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(report["complete_runs"], 0);
    let errors: u64 = report["errors"]
        .as_object()
        .unwrap()
        .values()
        .map(|count| count.as_u64().unwrap())
        .sum();
    assert_eq!(errors, 3);
}
