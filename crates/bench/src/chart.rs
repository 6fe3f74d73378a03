//! Charts as SVG (plotters, no system fonts: the SVG names a font family and the viewer draws
//! the text). A chart is a grid of panels, each a line chart or a bar chart, with a title,
//! axis labels and a legend.

use crate::error::{BenchError, Result};
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// Width and height of one panel in pixels.
const PANEL_SIZE: (u32, u32) = (640, 440);
/// Narrowest chart, so that a one-panel chart still has room for its title.
const MIN_WIDTH: u32 = 960;
/// Height of the chart's title band.
const TITLE_HEIGHT: u32 = 44;
/// Most labels on a numeric x axis.
const MAX_NUMERIC_X_LABELS: usize = 12;

/// Colours of successive series and bars (colour-blind-safe palette of Okabe and Ito).
const COLORS: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(240, 228, 66),
    RGBColor(0, 0, 0),
];

/// One line of a line chart.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed (peers and reference lines).
    pub dashed: bool,
    /// Index into the palette, so that related lines (a measurement and its peer) share a
    /// colour; `None`: the series' position in its panel.
    pub color: Option<usize>,
}

/// A line chart. When `x_names` is given, x values are indices into it and the axis shows the
/// names instead of numbers.
#[derive(Debug, Clone)]
pub struct LinePanel {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    pub x_names: Option<Vec<String>>,
}

/// A bar chart: one bar per entry, its value printed above it.
#[derive(Debug, Clone)]
pub struct BarPanel {
    pub title: String,
    pub y_label: String,
    pub bars: Vec<(String, f64)>,
}

/// One panel of a chart.
#[derive(Debug, Clone)]
pub enum Panel {
    Line(LinePanel),
    Bars(BarPanel),
}

/// Draws `panels` in a grid of `columns` columns under `title` into the SVG file `path`.
pub fn draw(path: &Path, title: &str, panels: &[Panel], columns: usize) -> Result<()> {
    draw_inner(path, title, panels, columns.max(1))
        .map_err(|error| BenchError::Chart { path: path.to_path_buf(), message: error.to_string() })
}

type DrawResult = std::result::Result<(), Box<dyn std::error::Error>>;

fn draw_inner(path: &Path, title: &str, panels: &[Panel], columns: usize) -> DrawResult {
    let columns = columns.min(panels.len().max(1));
    let rows = panels.len().div_ceil(columns).max(1);
    let size = ((PANEL_SIZE.0 * columns as u32).max(MIN_WIDTH), PANEL_SIZE.1 * rows as u32 + TITLE_HEIGHT);
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE)?;
    let body = root.titled(title, ("sans-serif", 24))?;
    let areas = body.split_evenly((rows, columns));
    for (panel, area) in panels.iter().zip(areas.iter()) {
        match panel {
            Panel::Line(line) => draw_lines(area, line)?,
            Panel::Bars(bars) => draw_bars(area, bars)?,
        }
    }
    root.present()?;
    Ok(())
}

fn draw_lines<DB: DrawingBackend>(area: &DrawingArea<DB, plotters::coord::Shift>, panel: &LinePanel) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let points = panel.series.iter().flat_map(|series| series.points.iter());
    let (mut x_min, mut x_max, mut y_max) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
    for &(x, y) in points {
        x_min = x_min.min(x);
        x_max = x_max.max(x);
        y_max = y_max.max(y);
    }
    if !x_min.is_finite() {
        (x_min, x_max) = (0.0, 1.0);
    }
    let x_pad = ((x_max - x_min) * 0.05).max(0.25);
    // Headroom above the data for the legend in the upper right corner: one row per series.
    let headroom = 1.15 + 0.08 * panel.series.len() as f64;
    let y_top = if y_max > 0.0 { y_max * headroom } else { 1.0 };
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((x_min - x_pad)..(x_max + x_pad), 0.0..y_top)?;
    let names = panel.x_names.clone();
    let x_formatter = move |x: &f64| -> String {
        let nearest = x.round();
        if (x - nearest).abs() > 1e-6 {
            return String::new();
        }
        match &names {
            Some(names) => names.get(nearest as usize).cloned().unwrap_or_default(),
            None => format!("{nearest}"),
        }
    };
    let distinct_x = {
        let mut xs: Vec<f64> =
            panel.series.iter().flat_map(|series| series.points.iter().map(|point| point.0)).collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        xs.len().max(2)
    };
    // Named x values get a label each; numbers (a timeline of a hundred points) at most
    // MAX_NUMERIC_X_LABELS, or the mesh turns grey.
    let x_labels = if panel.x_names.is_some() { distinct_x.max(6) } else { distinct_x.clamp(6, MAX_NUMERIC_X_LABELS) };
    chart
        .configure_mesh()
        .x_desc(&panel.x_label)
        .y_desc(&panel.y_label)
        .x_labels(x_labels)
        .x_label_formatter(&x_formatter)
        .y_label_formatter(&|y| format!("{y:.2}"))
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 15))
        .draw()?;
    for (index, series) in panel.series.iter().enumerate() {
        let color = COLORS[series.color.unwrap_or(index) % COLORS.len()];
        let style = color.stroke_width(2);
        let annotation = if series.dashed {
            chart.draw_series(DashedLineSeries::new(series.points.iter().copied(), 8, 5, style))?
        } else {
            chart.draw_series(LineSeries::new(series.points.iter().copied(), style).point_size(4))?
        };
        annotation
            .label(&series.name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], color.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font(("sans-serif", 13))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

fn draw_bars<DB: DrawingBackend>(area: &DrawingArea<DB, plotters::coord::Shift>, panel: &BarPanel) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let count = panel.bars.len().max(1) as u32;
    let y_max = panel.bars.iter().map(|bar| bar.1).fold(0.0f64, f64::max);
    let y_top = if y_max > 0.0 { y_max * 1.2 } else { 1.0 };
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        // Segments 0..=last hold one bar each (a range of one key would be empty).
        .build_cartesian_2d((0u32..(count - 1).max(1)).into_segmented(), 0.0..y_top)?;
    let names: Vec<String> = panel.bars.iter().map(|bar| bar.0.clone()).collect();
    let x_formatter = move |value: &SegmentValue<u32>| -> String {
        match value {
            SegmentValue::CenterOf(index) => names.get(*index as usize).cloned().unwrap_or_default(),
            _ => String::new(),
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_desc(&panel.y_label)
        .x_labels(count as usize)
        .x_label_formatter(&x_formatter)
        .y_label_formatter(&|y| format!("{y:.2}"))
        .label_style(("sans-serif", 12))
        .axis_desc_style(("sans-serif", 15))
        .draw()?;
    chart.draw_series(panel.bars.iter().enumerate().map(|(index, (_, value))| {
        let color = COLORS[index % COLORS.len()];
        let mut bar = Rectangle::new(
            [(SegmentValue::Exact(index as u32), 0.0), (SegmentValue::Exact(index as u32 + 1), *value)],
            color.filled(),
        );
        bar.set_margin(0, 0, 10, 10);
        bar
    }))?;
    let value_style = TextStyle::from(("sans-serif", 12).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
    chart.draw_series(panel.bars.iter().enumerate().map(|(index, (_, value))| {
        Text::new(
            format!("{value:.3}"),
            (SegmentValue::CenterOf(index as u32), *value + y_top * 0.01),
            value_style.clone(),
        )
    }))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_contain_their_text() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("chart.svg");
        let panels = vec![
            Panel::Line(LinePanel {
                title: "Throughput by threads".into(),
                x_label: "threads".into(),
                y_label: "GB/s".into(),
                series: vec![
                    Series {
                        name: "16 partitions".into(),
                        points: vec![(1.0, 2.0), (2.0, 3.5)],
                        dashed: false,
                        color: None,
                    },
                    Series {
                        name: "memory".into(),
                        points: vec![(1.0, 4.0), (2.0, 6.0)],
                        dashed: true,
                        color: Some(0),
                    },
                ],
                x_names: None,
            }),
            Panel::Bars(BarPanel {
                title: "Peers".into(),
                y_label: "seconds".into(),
                bars: vec![("pool".into(), 1.0), ("memory".into(), 0.5)],
            }),
        ];
        draw(&path, "A test chart", &panels, 2).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        for text in
            ["A test chart", "Throughput by threads", "16 partitions", "memory", "GB/s", "threads", "pool", "0.500"]
        {
            assert!(svg.contains(text), "the chart lacks {text:?}");
        }
        assert!(svg.contains("<text"));
    }
}
