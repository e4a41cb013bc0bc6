//! The soak's samples as a PNG (`--plot`): memory and the database's files, runs/s, and open
//! files over time, one panel each, with a line where the load stops. Drawn with plotters'
//! bitmap backend; its text uses DejaVu Sans embedded in the binary (the `dejavu` crate through
//! `ab_glyph`), so no system font or fontconfig is needed.

use std::ops::Range;
use std::path::Path;

use anyhow::Context;
use plotters::prelude::*;

use crate::Sample;
use crate::soak::SoakReport;

const MIB: f64 = 1024.0 * 1024.0;

/// A line of a panel: its name in the legend, its color, its points (seconds, value).
struct Line {
    name: &'static str,
    color: RGBColor,
    points: Vec<(f64, f64)>,
}

/// Draws `report`'s samples to `path` (a PNG, 1200 × 900).
///
/// # Errors
/// When the font cannot be loaded or the file not written.
pub fn draw(report: &SoakReport, path: &Path) -> anyhow::Result<()> {
    plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
        .map_err(|_| anyhow::anyhow!("the embedded font does not load"))?;
    let root = BitMapBackend::new(path, (1200, 900)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_error)?;
    let panels = root.split_evenly((3, 1));
    let samples = &report.samples;
    let end = samples.last().map_or(1.0, |sample| sample.t_s).max(1.0);
    let load_end = report.load_s;

    let mib = |value: fn(&Sample) -> u64| -> Vec<(f64, f64)> {
        samples
            .iter()
            .map(|sample| (sample.t_s, value(sample) as f64 / MIB))
            .collect()
    };
    panel(
        &panels[0],
        "Memory and database (MiB)",
        end,
        load_end,
        vec![
            line("RSS", RED, mib(|sample| sample.rss)),
            line("database", BLUE, mib(|sample| sample.db_bytes)),
            line("WAL", GREEN, mib(|sample| sample.wal_bytes)),
        ],
    )?;
    let runs: Vec<(f64, f64)> = samples
        .iter()
        .skip(1)
        .map(|sample| (sample.t_s, sample.runs_per_s))
        .collect();
    panel(
        &panels[1],
        "Runs/s",
        end,
        load_end,
        vec![line("runs/s", BLACK, runs)],
    )?;
    let files: Vec<(f64, f64)> = samples
        .iter()
        .map(|sample| (sample.t_s, sample.open_files as f64))
        .collect();
    panel(
        &panels[2],
        "Open files",
        end,
        load_end,
        vec![line("open files", MAGENTA, files)],
    )?;
    root.present()
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

fn line(name: &'static str, color: RGBColor, points: Vec<(f64, f64)>) -> Line {
    Line {
        name,
        color,
        points,
    }
}

/// One panel: `lines` over time, from 0 to its largest value, with the load's end marked.
fn panel(
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    title: &str,
    end: f64,
    load_end: f64,
    lines: Vec<Line>,
) -> anyhow::Result<()> {
    let top = lines
        .iter()
        .flat_map(|line| line.points.iter().map(|(_, value)| *value))
        .fold(0.0, f64::max)
        .max(1.0)
        * 1.1;
    let y: Range<f64> = 0.0..top;
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..end, y)
        .map_err(plot_error)?;
    chart
        .configure_mesh()
        .x_desc("seconds since the load started")
        .draw()
        .map_err(plot_error)?;
    chart
        .draw_series(LineSeries::new(
            [(load_end, 0.0), (load_end, top)],
            BLACK.mix(0.4),
        ))
        .map_err(plot_error)?
        .label("load stops")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK.mix(0.4)));
    for Line {
        name,
        color,
        points,
    } in lines
    {
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))
            .map_err(plot_error)?
            .label(name)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(plot_error)?;
    Ok(())
}

fn plot_error(error: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("cannot draw the plot: {error}")
}
