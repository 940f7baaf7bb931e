//! PNG charts of a report: one grouped bar chart per unit (`<workload>-<unit>.png`), an
//! item per group, a bar per engine, on a logarithmic axis (the figures of one chart span
//! orders of magnitude). Text is drawn with the embedded DejaVu Sans, so charts render the
//! same on machines without system fonts.

use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{FontStyle, FontTransform, RGBColor};

use crate::report::{Measurement, Report, higher_is_better};

/// The font family every text of a chart is drawn in (registered from the embedded bytes).
const FONT: &str = "sans-serif";

/// The chart's height without the item labels' area, and its width bounds, in pixels.
const HEIGHT: u32 = 600;
const MIN_WIDTH: u32 = 900;
const MAX_WIDTH: u32 = 4000;
/// Pixels per bar when sizing the chart.
const PX_PER_BAR: u32 = 14;
/// The longest item label shown, in characters (longer ones are shortened with `…`).
const MAX_LABEL_CHARS: usize = 40;

/// How unverified bars are outlined.
const UNVERIFIED: RGBColor = RGBColor(220, 20, 20);
const AXIS_GRAY: RGBColor = RGBColor(110, 110, 110);

/// Writes one chart per unit of `report` into `dir` (created if missing); returns the files
/// written, in the order the units first appear. A unit without a single positive, finite
/// value gets no chart (there is nothing to put on a logarithmic axis).
pub fn write_charts(report: &Report, dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    let units = first_appearance(report.results.iter().map(|m| m.unit.as_str()));
    for unit in units {
        let Some(chart) = UnitChart::new(report, unit) else { continue };
        if written.is_empty() {
            std::fs::create_dir_all(dir)?;
        }
        let path = dir.join(format!("{}-{}.png", file_part(&report.workload), file_part(unit)));
        chart.draw(&path)?;
        written.push(path);
    }
    Ok(written)
}

/// Registers the embedded DejaVu Sans as `sans-serif`, once per process.
fn register_fonts() {
    static FONTS: Once = Once::new();
    FONTS.call_once(|| {
        // The bytes are a valid TrueType font; should registration ever fail, plotters
        // falls back to its own lookup and drawing reports the error.
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
    });
}

/// The distinct strings of `items`, in the order they first appear.
fn first_appearance<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen: Vec<&str> = Vec::new();
    for item in items {
        if !seen.contains(&item) {
            seen.push(item);
        }
    }
    seen
}

/// `name` made safe as part of a file name.
fn file_part(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' })
        .collect();
    if s.is_empty() || s.chars().all(|c| c == '.') { "_".to_string() } else { s }
}

/// Any plotters error as an I/O error.
fn io_err(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("chart: {e}"))
}

/// The fill of `engine`'s bars: fixed for the known engines (BeeDB orange, the generic
/// twin a lighter orange, SQLite blue, DuckDB olive, PostgreSQL purple), else from a
/// spare palette by the engine's position.
fn engine_color(engine: &str, position: usize) -> RGBColor {
    const SPARE: [RGBColor; 6] = [
        RGBColor(23, 160, 150),  // teal
        RGBColor(120, 120, 120), // gray
        RGBColor(140, 86, 75),   // brown
        RGBColor(227, 119, 194), // pink
        RGBColor(44, 160, 44),   // green
        RGBColor(80, 80, 200),   // indigo
    ];
    match engine {
        "beedb" => RGBColor(230, 105, 0),
        "beedb-generic" => RGBColor(253, 182, 100),
        "sqlite" => RGBColor(31, 119, 180),
        "duckdb" => RGBColor(188, 170, 20),
        "postgres" | "postgresql" => RGBColor(128, 80, 170),
        _ => SPARE[position % SPARE.len()],
    }
}

/// Red diagonal hatching over the pixel rectangle `top_left..bottom_right` of `area`.
fn hatch<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    top_left: (i32, i32),
    bottom_right: (i32, i32),
) -> io::Result<()> {
    const STEP: i32 = 7;
    let ((x0, y0), (x1, y1)) = (top_left, bottom_right);
    // Lines x + y = c, clipped to the rectangle.
    let mut c = x0 + y0 + STEP / 2;
    while c < x1 + y1 {
        let (from, to) = ((c - y1).max(x0), (c - y0).min(x1));
        if from <= to {
            let line =
                PathElement::new(vec![(from, c - from), (to, c - to)], UNVERIFIED.stroke_width(1));
            area.draw(&line).map_err(io_err)?;
        }
        c += STEP;
    }
    Ok(())
}

/// `v` as a short tick label: `0.001`, `2.5`, `40`, `10k`, `1.5M`, `1G`.
fn tick_label(v: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    let (scaled, suffix) = match v.abs() {
        a if a >= 1e12 => (v / 1e12, "T"),
        a if a >= 1e9 => (v / 1e9, "G"),
        a if a >= 1e6 => (v / 1e6, "M"),
        a if a >= 1e3 => (v / 1e3, "k"),
        _ => (v, ""),
    };
    let a = scaled.abs();
    let decimals = if a == 0.0 || a >= 100.0 {
        0
    } else if a >= 1.0 {
        2
    } else {
        ((-a.log10()).ceil() as usize + 2).min(15)
    };
    let mut s = format!("{scaled:.decimals$}");
    if s.contains('.') {
        s = s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    s + suffix
}

/// `label`, shortened to `MAX_LABEL_CHARS` characters.
fn short_label(label: &str) -> String {
    if label.chars().count() <= MAX_LABEL_CHARS {
        label.to_string()
    } else {
        let mut s: String = label.chars().take(MAX_LABEL_CHARS - 1).collect();
        s.push('…');
        s
    }
}

/// The x axis: item `i` spans `i..i + 1`; its label sits at `i + 0.5`.
#[derive(Clone)]
struct ItemAxis {
    items: usize,
}

impl Ranged for ItemAxis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let span = f64::from(limit.1 - limit.0);
        limit.0 + (value / self.items.max(1) as f64 * span).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        let step = self.items.div_ceil(hint.max_num_points().max(1)).max(1);
        (0..self.items).step_by(step).map(|i| i as f64 + 0.5).collect()
    }

    fn range(&self) -> Range<f64> {
        0.0..self.items.max(1) as f64
    }
}

/// Only for the trait bound: the chart always sets its own label formatter.
impl ValueFormatter<f64> for ItemAxis {
    fn format(_value: &f64) -> String {
        String::new()
    }
}

/// One bar: the group, the engine's slot in it, the value and whether it was verified.
struct Bar {
    item: usize,
    slot: usize,
    value: f64,
    verified: bool,
}

/// Everything one unit's chart shows.
struct UnitChart<'a> {
    report: &'a Report,
    unit: &'a str,
    items: Vec<&'a str>,
    engines: Vec<&'a str>,
    bars: Vec<Bar>,
    /// The y axis bounds, powers of ten around the values.
    low: f64,
    high: f64,
}

impl<'a> UnitChart<'a> {
    /// The chart of `unit`, or `None` when it has no value a log axis can show.
    fn new(report: &'a Report, unit: &'a str) -> Option<UnitChart<'a>> {
        let measured: Vec<&Measurement> = report.results.iter().filter(|m| m.unit == unit).collect();
        let items = first_appearance(measured.iter().map(|m| m.item.as_str()));
        // The report's engines in its order, then any engine only the results name.
        let named = report.engines.iter().map(|e| e.name.as_str());
        let engines: Vec<&str> =
            first_appearance(named.chain(measured.iter().map(|m| m.engine.as_str())))
                .into_iter()
                .filter(|e| measured.iter().any(|m| m.engine == *e))
                .collect();

        let mut bars: Vec<Bar> = Vec::new();
        for m in &measured {
            if !(m.value.is_finite() && m.value > 0.0) {
                continue;
            }
            let item = items.iter().position(|i| *i == m.item)?;
            let slot = engines.iter().position(|e| *e == m.engine)?;
            // A repeated (item, engine) keeps its first figure.
            if !bars.iter().any(|b| b.item == item && b.slot == slot) {
                bars.push(Bar { item, slot, value: m.value, verified: m.verified });
            }
        }
        if bars.is_empty() {
            return None;
        }

        let min = bars.iter().map(|b| b.value).fold(f64::INFINITY, f64::min);
        let max = bars.iter().map(|b| b.value).fold(0.0, f64::max);
        // Whole decades, the smallest bar still a visible stub above the floor.
        let mut low_exp = min.log10().floor();
        if 10f64.powf(low_exp) >= min * 0.8 {
            low_exp -= 1.0;
        }
        // Headroom above the tallest bar for its figure, at least to the next decade line.
        let low = 10f64.powf(low_exp);
        let high = (max * 1.6).max(low * 10.0);
        if !(low.is_finite() && high.is_finite() && low > 0.0) {
            return None;
        }
        Some(UnitChart { report, unit, items, engines, bars, low, high })
    }

    fn title(&self) -> String {
        let mut title = self.report.workload.clone();
        for (k, v) in &self.report.parameters {
            title.push_str(&format!("  {k}={v}"));
        }
        title
    }

    fn y_description(&self) -> String {
        let better = if higher_is_better(self.unit) { "higher is better" } else { "lower is better" };
        format!("{} (log scale) — {better}", self.unit)
    }

    fn machine_line(&self) -> String {
        let m = &self.report.machine;
        let mut parts = Vec::new();
        if !m.cpu.is_empty() {
            parts.push(m.cpu.clone());
        }
        if m.cores > 0 {
            parts.push(format!("{} cores", m.cores));
        }
        if m.memory_gib > 0.0 {
            parts.push(format!("{:.1} GiB", m.memory_gib));
        }
        if !m.os.is_empty() {
            parts.push(m.os.clone());
        }
        parts.join(" · ")
    }

    fn draw(&self, path: &Path) -> io::Result<()> {
        register_fonts();
        let label_font = (FONT, 13).into_font();
        let labels: Vec<String> = self.items.iter().map(|i| short_label(i)).collect();

        // Width from the number of bars; item labels turned upright when they do not fit.
        let bars_total = (self.items.len() * self.engines.len()) as u32;
        let width =
            (40u32.saturating_add(bars_total.saturating_mul(PX_PER_BAR))).clamp(MIN_WIDTH, MAX_WIDTH);
        let y_area: u32 = 80;
        let plot_width = width.saturating_sub(y_area + 30).max(1);
        let slot_px = plot_width / self.items.len().max(1) as u32;
        let (mut widest, mut tallest) = (0u32, 0u32);
        for label in &labels {
            let (w, h) = plotters::style::FontDesc::box_size(&label_font, label)
                .unwrap_or((label.len() as u32 * 8, 14));
            widest = widest.max(w);
            tallest = tallest.max(h);
        }
        let upright = widest + 6 > slot_px;
        let x_area = if upright { widest + 16 } else { tallest + 16 };
        let height = HEIGHT + x_area;
        // Upright labels need a line each; skip some when even that does not fit.
        let max_labels =
            if upright { (plot_width / (tallest + 2).max(1)).max(1) } else { self.items.len() as u32 };

        let root = BitMapBackend::new(path, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(io_err)?;

        // Header: the title, then the legend in one row.
        let (header, body) = root.split_vertically(78);
        let title_font = (FONT, 22).into_font().color(&BLACK);
        header.draw_text(&self.title(), &title_font, (y_area as i32 - 50, 10)).map_err(io_err)?;
        let machine = self.machine_line();
        if !machine.is_empty() {
            let style = (FONT, 12).into_font().color(&AXIS_GRAY).pos(Pos::new(HPos::Right, VPos::Top));
            header.draw_text(&machine, &style, (width as i32 - 30, 16)).map_err(io_err)?;
        }
        let legend_font = (FONT, 15).into_font().color(&BLACK);
        let mut x = y_area as i32 - 50;
        let y = 52;
        let any_unverified = self.bars.iter().any(|b| !b.verified);
        let mut entries: Vec<(String, ShapeStyle)> = self
            .engines
            .iter()
            .enumerate()
            .map(|(i, e)| (e.to_string(), engine_color(e, i).filled()))
            .collect();
        if any_unverified {
            entries.push(("unverified (answer differed)".to_string(), UNVERIFIED.stroke_width(2)));
        }
        for (name, style) in entries {
            header.draw(&Rectangle::new([(x, y - 7), (x + 18, y + 7)], style)).map_err(io_err)?;
            if style.color == UNVERIFIED.to_rgba() {
                hatch(&header, (x, y - 7), (x + 18, y + 7))?;
            }
            header.draw_text(&name, &legend_font, (x + 24, y - 9)).map_err(io_err)?;
            let (w, _) = header.estimate_text_size(&name, &legend_font).map_err(io_err)?;
            x += 24 + w as i32 + 22;
        }

        let mut chart = ChartBuilder::on(&body)
            .margin_right(30)
            .margin_left(6)
            .margin_top(8)
            .margin_bottom(4)
            .x_label_area_size(x_area)
            .y_label_area_size(y_area)
            // A hair below the floor, so that rounding keeps its decade's label.
            .build_cartesian_2d(
                ItemAxis { items: self.items.len() },
                (self.low * (1.0 - 1e-9)..self.high).log_scale(),
            )
            .map_err(io_err)?;

        // Upright labels are drawn below (the mesh would centre them on the axis).
        let n = self.items.len();
        let x_formatter = |v: &f64| {
            if upright {
                return String::new();
            }
            labels.get((v.max(0.0) as usize).min(n.saturating_sub(1))).cloned().unwrap_or_default()
        };
        let y_formatter = |v: &f64| tick_label(*v);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(max_labels as usize)
            .x_label_formatter(&x_formatter)
            .x_label_style(label_font.clone())
            .y_labels(12)
            .y_label_formatter(&y_formatter)
            .y_label_style((FONT, 13).into_font())
            .y_desc(self.y_description())
            .axis_desc_style((FONT, 15).into_font())
            .bold_line_style(RGBColor(200, 200, 200).stroke_width(1))
            .light_line_style(RGBColor(242, 242, 242).stroke_width(1))
            .axis_style(AXIS_GRAY.stroke_width(1))
            .draw()
            .map_err(io_err)?;

        if upright {
            // Reading upwards, ending just below the axis.
            let style = label_font
                .clone()
                .transform(FontTransform::Rotate270)
                .color(&BLACK)
                .pos(Pos::new(HPos::Right, VPos::Center));
            let step = n.div_ceil(max_labels.max(1) as usize).max(1);
            for (i, label) in labels.iter().enumerate().step_by(step) {
                let (px, py) = chart.backend_coord(&(i as f64 + 0.5, self.low));
                root.draw_text(label, &style, (px, py + 8)).map_err(io_err)?;
            }
        }

        // Bars: the group takes 80% of its item's span, each engine an equal slot in it.
        let slots = self.engines.len().max(1) as f64;
        let slot_w = 0.8 / slots;
        let gap = slot_w * 0.08;
        let floor = self.low;
        let bar_rect = |b: &Bar| {
            let x0 = b.item as f64 + 0.1 + b.slot as f64 * slot_w + gap;
            [(x0, floor), (x0 + slot_w - 2.0 * gap, b.value)]
        };
        chart
            .draw_series(self.bars.iter().map(|b| {
                Rectangle::new(bar_rect(b), engine_color(self.engines[b.slot], b.slot).filled())
            }))
            .map_err(io_err)?;
        // Unverified bars: hatched, outlined in red.
        for b in self.bars.iter().filter(|b| !b.verified) {
            let [a, z] = bar_rect(b);
            let (a, z) = (chart.backend_coord(&a), chart.backend_coord(&z));
            hatch(&root, (a.0.min(z.0), a.1.min(z.1)), (a.0.max(z.0), a.1.max(z.1)))?;
        }
        chart
            .draw_series(
                self.bars
                    .iter()
                    .filter(|b| !b.verified)
                    .map(|b| Rectangle::new(bar_rect(b), UNVERIFIED.stroke_width(2))),
            )
            .map_err(io_err)?;

        // Figures above the bars when there is room for them.
        let bar_px = slot_px as f64 * slot_w;
        if bar_px >= 34.0 {
            let value_font = (FONT, 11)
                .into_font()
                .color(&RGBColor(60, 60, 60))
                .pos(Pos::new(HPos::Center, VPos::Bottom));
            chart
                .draw_series(self.bars.iter().map(|b| {
                    let [(x0, _), (x1, v)] = bar_rect(b);
                    Text::new(tick_label(b.value), ((x0 + x1) / 2.0, v), value_font.clone())
                }))
                .map_err(io_err)?;
        }

        root.present().map_err(io_err)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{EngineInfo, Machine};

    fn report(workload: &str, engines: &[&str], results: Vec<Measurement>) -> Report {
        Report {
            workload: workload.to_string(),
            parameters: vec![("n".into(), "10000".into()), ("runs".into(), "5".into())],
            machine: Machine { cpu: "Test CPU".into(), cores: 2, memory_gib: 3.8, os: "linux".into() },
            engines: engines
                .iter()
                .map(|e| EngineInfo { name: e.to_string(), version: "1".into() })
                .collect(),
            results,
            notes: Vec::new(),
            items: Vec::new(),
            profiles: Vec::new(),
            sections: Vec::new(),
        }
    }

    fn m(item: &str, engine: &str, value: f64, unit: &str, verified: bool) -> Measurement {
        Measurement {
            timed_out: false,
            item: item.into(),
            engine: engine.into(),
            value,
            unit: unit.into(),
            verified,
            runs: vec![value],
        }
    }

    /// The width and height in the PNG's IHDR chunk, after checking the signature.
    fn png_size(path: &Path) -> (u32, u32) {
        let bytes = std::fs::read(path).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{} is not a PNG", path.display());
        assert_eq!(&bytes[12..16], b"IHDR");
        let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
        let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
        (w, h)
    }

    fn three_by_three(unit: &str) -> Vec<Measurement> {
        let mut results = Vec::new();
        for (i, item) in ["q1", "q2", "q3"].iter().enumerate() {
            for (j, engine) in ["beedb", "sqlite", "duckdb"].iter().enumerate() {
                let value = 10f64.powi(i as i32 - 1) * (j + 1) as f64;
                results.push(m(item, engine, value, unit, !(i == 1 && j == 2)));
            }
        }
        results
    }

    #[test]
    fn chart_per_unit() {
        let dir = tempfile::tempdir().unwrap();
        let mut results = three_by_three("ms");
        results.push(m("lineitem", "beedb", 12.5, "s", true));
        results.push(m("lineitem", "beedb", 1.5e9, "bytes", true));
        let r = report("wisconsin", &["beedb", "sqlite", "duckdb"], results);
        let files = write_charts(&r, dir.path()).unwrap();
        let names: Vec<_> =
            files.iter().map(|f| f.file_name().unwrap().to_str().unwrap().to_string()).collect();
        assert_eq!(names, ["wisconsin-ms.png", "wisconsin-s.png", "wisconsin-bytes.png"]);
        for f in &files {
            assert!(f.exists());
            let (w, h) = png_size(f);
            assert!((MIN_WIDTH..=MAX_WIDTH).contains(&w), "width {w}");
            assert!((HEIGHT..HEIGHT + 400).contains(&h), "height {h}");
        }
    }

    #[test]
    fn chart_unverified_zero_and_missing() {
        let dir = tempfile::tempdir().unwrap();
        let mut results = three_by_three("ms");
        results.push(m("q4", "beedb", 0.0, "ms", true));
        results.push(m("q4", "sqlite", f64::NAN, "ms", true));
        results.push(m("q4", "duckdb", -1.0, "ms", true));
        results.push(m("q5", "sqlite", 1e-3, "ms", true));
        results.push(m("q5", "postgres", 1e9, "ms", false));
        let r = report("wisconsin", &["beedb", "sqlite", "duckdb", "postgres"], results);
        let files = write_charts(&r, dir.path()).unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(png_size(&files[0]).0, MIN_WIDTH);
    }

    #[test]
    fn chart_tps() {
        let dir = tempfile::tempdir().unwrap();
        let results = vec![
            m("tpcb sync=full clients=1", "beedb", 5400.0, "tps", true),
            m("tpcb sync=full clients=1", "sqlite", 2100.0, "tps", true),
            m("tpcb sync=off clients=4", "beedb", 91000.0, "tps", true),
            m("tpcb sync=off clients=4", "postgres", 12000.0, "tps", true),
        ];
        let r = report("tp1", &["beedb", "sqlite", "postgres"], results);
        let files = write_charts(&r, dir.path()).unwrap();
        assert_eq!(files, [dir.path().join("tp1-tps.png")]);
        png_size(&files[0]);
    }

    #[test]
    fn chart_single_item_single_engine() {
        let dir = tempfile::tempdir().unwrap();
        let r = report("load", &["beedb"], vec![m("lineitem", "beedb", 100.0, "s", true)]);
        let files = write_charts(&r, dir.path()).unwrap();
        assert_eq!(files, [dir.path().join("load-s.png")]);
        assert_eq!(png_size(&files[0]).0, MIN_WIDTH);
    }

    #[test]
    fn chart_many_items_is_wide_and_capped() {
        let dir = tempfile::tempdir().unwrap();
        let engines = ["beedb", "beedb-generic", "sqlite", "duckdb", "postgres"];
        let mut results = Vec::new();
        for q in 1..=32 {
            for (j, e) in engines.iter().enumerate() {
                results.push(m(&format!("q{q}"), e, (q * (j + 1)) as f64 * 0.37, "ms", true));
            }
        }
        let r = report("wisconsin", &engines, results.clone());
        let files = write_charts(&r, dir.path()).unwrap();
        assert_eq!(png_size(&files[0]).0, 40 + 32 * 5 * PX_PER_BAR);

        for q in 33..=200 {
            results.push(m(
                &format!("a rather long item name number {q} of many"),
                "beedb",
                q as f64,
                "ms",
                true,
            ));
        }
        let r = report("wisconsin", &engines, results);
        let files = write_charts(&r, dir.path()).unwrap();
        assert_eq!(png_size(&files[0]).0, MAX_WIDTH);
    }

    #[test]
    fn chart_empty_and_unplottable_write_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let r = report("wisconsin", &["beedb"], Vec::new());
        assert!(write_charts(&r, dir.path()).unwrap().is_empty());
        let r = report("wisconsin", &["beedb"], vec![m("q1", "beedb", 0.0, "ms", true)]);
        assert!(write_charts(&r, dir.path()).unwrap().is_empty());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn chart_tick_labels() {
        assert_eq!(tick_label(0.001), "0.001");
        assert_eq!(tick_label(0.05), "0.05");
        assert_eq!(tick_label(1.0), "1");
        assert_eq!(tick_label(2.5), "2.5");
        assert_eq!(tick_label(40.0), "40");
        assert_eq!(tick_label(10_000.0), "10k");
        assert_eq!(tick_label(1.5e6), "1.5M");
        assert_eq!(tick_label(1e9), "1G");
        assert_eq!(file_part("tpcb sync=full/x"), "tpcb_sync_full_x");
    }

    /// Writes `/tmp/beedb-chart-example*.png` to look at: `cargo test -p beedb-lab
    /// chart_example -- --ignored`.
    #[test]
    #[ignore]
    fn chart_example() {
        let engines = ["beedb", "beedb-generic", "sqlite", "duckdb", "postgres"];
        let mut results = Vec::new();
        for q in 1..=32 {
            for (j, e) in engines.iter().enumerate() {
                let v = 0.02 * 1.35f64.powi(q) * [1.0, 1.8, 3.5, 0.9, 6.0][j];
                results.push(m(&format!("q{q}"), e, v, "ms", !(q == 7 && j == 3)));
            }
        }
        let tmp = tempfile::tempdir().unwrap();
        let r = report("wisconsin", &engines, results);
        let files = write_charts(&r, tmp.path()).unwrap();
        std::fs::copy(&files[0], "/tmp/beedb-chart-example.png").unwrap();

        let results = vec![
            m("tpcb sync=full clients=1", "beedb", 5400.0, "tps", true),
            m("tpcb sync=full clients=1", "sqlite", 2100.0, "tps", true),
            m("tpcb sync=full clients=1", "postgres", 900.0, "tps", true),
            m("tpcb sync=off clients=4", "beedb", 91000.0, "tps", true),
            m("tpcb sync=off clients=4", "sqlite", 30000.0, "tps", false),
            m("tpcb sync=off clients=4", "postgres", 12000.0, "tps", true),
        ];
        let r = report("tp1", &["beedb", "sqlite", "postgres"], results);
        let files = write_charts(&r, tmp.path()).unwrap();
        std::fs::copy(&files[0], "/tmp/beedb-chart-example-tps.png").unwrap();

        let mut results = Vec::new();
        for t in 0..24 {
            for (j, e) in engines.iter().enumerate() {
                let v = 1e3 * 2.1f64.powi(t) * [1.0, 1.1, 1.4, 0.7, 2.0][j];
                results.push(m(&format!("table_{t}_with_a_longer_name"), e, v, "bytes", t != 3));
            }
        }
        let r = report("load", &engines, results);
        let files = write_charts(&r, tmp.path()).unwrap();
        std::fs::copy(&files[0], "/tmp/beedb-chart-example-bytes.png").unwrap();
    }
}
