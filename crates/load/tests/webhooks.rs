//! The webhooks scenario: its outage window as written on the command line, which latencies
//! its outages leave out and why, and one small run of the whole scenario against the real
//! `agentwire serve` of this build profile (a SIGKILL, a receiver down, every request recorded)
//! whose report adds up. It times nothing; the signatures of the recorded requests are checked
//! by the reference library in `peers/webhooks`.
#![allow(clippy::unwrap_used)]

mod common;

use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentwire_load::webhooks::{Exclusion, Outages, Way, Window};
use common::agentwire;
use serde_json::Value;

#[track_caller]
fn check_window(text: &str, expect: Option<(u64, u64)>) {
    let window = text.parse::<Window>();
    match expect {
        Some((from, to)) => {
            let window = window.unwrap();
            assert_eq!(
                (window.from, window.to),
                (Duration::from_millis(from), Duration::from_millis(to)),
                "{text}"
            );
            // It reads back from how it prints.
            assert_eq!(window.to_string().parse::<Window>().unwrap(), window);
        }
        None => assert!(window.is_err(), "{text} read as {window:?}"),
    }
}

#[test]
fn a_window_reads_as_two_durations_from_the_start() {
    check_window("5s..12s", Some((5_000, 12_000)));
    check_window("500ms..2s", Some((500, 2_000)));
    check_window("0s..1m 30s", Some((0, 90_000)));
    check_window(" 1s .. 2s ", Some((1_000, 2_000)));
    check_window("5s", None);
    check_window("5..12", None);
    check_window("12s..5s", None);
    check_window("5s..5s", None);
    check_window("..5s", None);
}

/// A second of the test, on the wall clock.
fn at(second: f64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_000_000) + Duration::from_secs_f64(second)
}

#[track_caller]
fn check_exclusion(outages: &Outages, way: (f64, f64, bool), expect: Option<Exclusion>) {
    let (committed, delivered, refused) = way;
    let way = Way {
        committed: at(committed),
        delivered: at(delivered),
        refused,
    };
    assert_eq!(outages.exclusion(&way), expect, "{way:?}");
}

#[test]
fn latencies_count_only_what_met_no_outage() {
    // The receiver down from 10 s to 15 s, the server from 20 s until it listened at 21 s.
    let outages = Outages {
        receiver_down: Some((at(10.0), at(15.0))),
        server_down: Some((at(20.0), at(21.0))),
    };
    // Up all the way.
    check_exclusion(&outages, (1.0, 1.01, false), None);
    check_exclusion(&outages, (9.9, 9.95, false), None);
    check_exclusion(&outages, (15.0, 15.01, false), None);
    check_exclusion(&outages, (19.0, 19.99, false), None);
    // Committed by the restarted server once it listened: counted.
    check_exclusion(&outages, (21.0, 21.02, false), None);
    // Committed as it started, before it listened (the `incomplete` of the runs the kill cut).
    check_exclusion(&outages, (20.5, 21.2, false), Some(Exclusion::ServerDown));
    // A slow delivery while everything was up is counted, however slow.
    check_exclusion(&outages, (16.0, 19.5, false), None);
    // Committed while the receiver was down, whether refused or first tried after it.
    check_exclusion(&outages, (10.0, 15.5, true), Some(Exclusion::ReceiverDown));
    check_exclusion(&outages, (14.9, 15.1, false), Some(Exclusion::ReceiverDown));
    // Committed just before it went down and refused then.
    check_exclusion(&outages, (9.99, 16.0, true), Some(Exclusion::Refused));
    // Committed before the kill, delivered after it (claimed and cut, or still queued).
    check_exclusion(&outages, (19.99, 36.0, false), Some(Exclusion::ServerDown));
    check_exclusion(&outages, (19.99, 21.1, false), Some(Exclusion::ServerDown));
    // Delivered before the kill.
    check_exclusion(&outages, (19.98, 19.99, false), None);

    // Without outages everything counts.
    let none = Outages::default();
    check_exclusion(&none, (10.0, 15.5, false), None);
}

#[test]
fn a_small_run_through_a_kill_and_a_receiver_down_delivers_every_status_change() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("deliveries.ndjson");
    // 60 runs of about a second over 3 s; the server killed at 1.5 s with about 20 runs going;
    // the receiver down across the kill.
    let output = Command::new(env!("CARGO_BIN_EXE_agentwire-load"))
        .args([
            "--webhooks",
            "--runs",
            "60",
            "--tokens",
            "20",
            "--rate",
            "20",
        ])
        .args(["--ramp-ms", "3000", "--kill-after", "1500ms"])
        .args(["--receiver-down", "500ms..2500ms", "--record"])
        .arg(&record)
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
    assert!(stdout.starts_with("| runs | started |"), "{stdout}");
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let count = |key: &str| report[key].as_u64().unwrap();
    assert_eq!(count("started"), 60, "{report}");
    assert_eq!(count("delivered"), count("status_changes"), "{report}");
    assert_eq!(count("unexpected"), 0, "{report}");
    assert!(count("runs_stored") >= 60, "{report}");
    // The kill cut runs: they end `incomplete`, the others `completed`.
    let ended = report["ended"].as_object().unwrap();
    assert!(ended["incomplete"].as_u64().unwrap() > 0, "{report}");
    let ended_runs: u64 = ended.values().map(|runs| runs.as_u64().unwrap()).sum();
    assert_eq!(ended_runs, count("runs_stored"), "{report}");
    assert!(count("refused") > 0, "{report}");
    // Every delivered change is counted once, in the latency or left out of it.
    let excluded: u64 = report["excluded"]
        .as_object()
        .unwrap()
        .values()
        .map(|changes| changes.as_u64().unwrap())
        .sum();
    assert!(excluded > 0, "{report}");
    assert_eq!(count("latency_counted") + excluded, count("delivered"));
    assert!(report["killed_at_s"].as_f64().unwrap() >= 1.5, "{report}");
    let [from, to] = [0, 1].map(|i| report["receiver_down_s"][i].as_f64().unwrap());
    assert!(from >= 0.5 && to >= 2.5 && to > from, "{report}");

    // One line per request taken: the deliveries, their repeats and the refusals.
    let lines: Vec<Value> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(count("recorded"), lines.len() as u64);
    assert_eq!(
        lines.len() as u64,
        count("delivered") + count("repeated") + count("refused"),
        "{report}"
    );
    for line in &lines {
        assert!(line["secret"].as_str().unwrap().starts_with("whsec_"));
        for header in ["webhook-id", "webhook-timestamp", "webhook-signature"] {
            assert!(line["headers"][header].is_string(), "{line}");
        }
        assert!(
            matches!(line["answered"].as_u64(), Some(204 | 503)),
            "{line}"
        );
        assert!(line["received_at"].as_f64().unwrap() > 0.0);
        assert!(line["body_base64"].is_string());
    }
}
