//! The closed-loop modes against the real `agentwire serve` of this build profile, without timing
//! anything: every run read to its end and checked, counts that add up, the floor streaming
//! what the server streams, and a soak's samples, CSV and plot.
#![allow(clippy::unwrap_used)]

mod common;

use std::process::{Command, Output};

use common::agentwire;
use serde_json::Value;

/// Runs the generator with `args`, expecting success, and returns its last line as JSON.
fn load(args: &[&str]) -> Value {
    let output: Output = Command::new(env!("CARGO_BIN_EXE_agentwire-load"))
        .args(args)
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
    serde_json::from_str(stdout.lines().last().unwrap()).unwrap()
}

#[test]
fn each_endpoint_under_the_closed_loop_completes_every_run_beside_a_floor_of_the_same_bytes() {
    for endpoint in ["native", "ai-sdk", "ag-ui"] {
        let report = load(&[
            "--unpaced",
            "--conns",
            "4",
            "--duration",
            "1",
            "--tokens",
            "50",
            "--endpoint",
            endpoint,
        ]);
        for server in ["full", "floor"] {
            let row = &report[server];
            assert_eq!(row["endpoint"], endpoint, "{report}");
            assert_eq!(row["errors"], serde_json::json!({}), "{server}: {report}");
            let total = row["total_runs"].as_u64().unwrap();
            // Each connection reads at least one run, and every run read was complete.
            assert!(total >= 4, "{server}: {report}");
            assert_eq!(
                row["complete_runs"].as_u64(),
                Some(total),
                "{server}: {report}"
            );
            let runs = row["runs"].as_u64().unwrap();
            assert!(runs <= total, "{server}: {report}");
            // Every counted run brought its 50 deltas.
            let runs_per_s = row["runs_per_s"].as_f64().unwrap();
            let deltas_per_s = row["deltas_per_s"].as_f64().unwrap();
            assert!(
                (deltas_per_s - 50.0 * runs_per_s).abs() < 1e-6 * deltas_per_s.max(1.0),
                "{server}: {report}"
            );
        }
        // The floor streams the server's frames: the same bytes per run, but for the ids a
        // client chooses (AG-UI's thread and run ids are echoed, and the floor's are short).
        let full = report["full"]["bytes_per_run"].as_f64().unwrap();
        let floor = report["floor"]["bytes_per_run"].as_f64().unwrap();
        if report["full"]["runs"].as_u64() > Some(0) && report["floor"]["runs"].as_u64() > Some(0) {
            assert!(
                (full - floor).abs() <= 0.01 * full,
                "{endpoint}: {full} bytes per run against the floor's {floor}"
            );
        }
        let ratio = report["ratio"].as_f64().unwrap();
        assert!(ratio.is_finite() && ratio >= 0.0, "{report}");
    }
}

#[test]
fn a_soak_samples_the_server_writes_its_csv_and_plot_and_judges_its_targets() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("soak.csv");
    let png = dir.path().join("soak.png");
    let report = load(&[
        "--soak",
        "2",
        "--idle",
        "1",
        "--sample-every",
        "1",
        "--conns",
        "4",
        "--tokens",
        "20",
        "--csv",
        csv.to_str().unwrap(),
        "--plot",
        png.to_str().unwrap(),
    ]);
    assert_eq!(report["errors"], serde_json::json!({}), "{report}");
    assert!(report["runs"].as_u64().unwrap() >= 4, "{report}");
    assert_eq!(report["complete_runs"], report["runs"], "{report}");
    // A sample before the load, at 1 and 2 s of load, at the end of the idle second.
    let samples = report["samples"].as_array().unwrap();
    let phases: Vec<bool> = samples
        .iter()
        .map(|sample| sample["loaded"].as_bool().unwrap())
        .collect();
    assert_eq!(phases, [true, true, true, false], "{report}");
    for sample in samples {
        assert!(sample["rss"].as_u64().unwrap() > 0, "{report}");
        assert!(sample["open_files"].as_u64().unwrap() > 0, "{report}");
        assert!(sample["db_bytes"].as_u64().unwrap() > 0, "{report}");
    }
    let csv = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], agentwire_load::soak::CSV_HEADER);
    assert_eq!(lines.len(), samples.len() + 1, "{csv}");
    assert!(
        lines[1..].iter().all(|line| line.split(',').count() == 8),
        "{csv}"
    );
    let png = std::fs::read(&png).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let verdicts: Vec<&str> = report["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|verdict| verdict["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        verdicts,
        [
            "peak RSS",
            "RSS after idle",
            "RSS flat",
            "runs/s flat",
            "WAL max"
        ]
    );
}
