//! What a run produced, and how it is shown: the text table, the JSON object, the raw
//! numbers and the charts saved under `--out`.

use serde::Serialize;

/// The machine a run was measured on.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub cpu: String,
    pub cores: usize,
    pub memory_gib: f64,
    pub os: String,
}

/// An engine as it took part in the run.
#[derive(Debug, Clone, Serialize)]
pub struct EngineInfo {
    pub name: String,
    pub version: String,
}

/// One figure: the median of `runs` for one item on one engine.
#[derive(Debug, Clone, Serialize)]
pub struct Measurement {
    /// What was measured: a query (`q7`), a TP1 configuration
    /// (`tpcb sync=full clients=1`), a table (`lineitem`).
    pub item: String,
    pub engine: String,
    /// The median of `runs`.
    pub value: f64,
    /// `ms` (lower is better), `s` (lower), `tps` (higher), `tpmC` (higher), `bytes` (lower).
    pub unit: String,
    /// The engine's answer equalled every other engine's (or the known answer).
    pub verified: bool,
    /// The item ran over the workload's timeout and was stopped: `value` is NaN,
    /// `runs` holds the runs that finished, and `verified` is false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
    /// Every measured run, in order (after the warm-up).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<f64>,
}

/// Everything one `beedb bench WORKLOAD` produced.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub workload: String,
    /// The workload's parameters as given (`n=10000`, `runs=5`, …).
    pub parameters: Vec<(String, String)>,
    pub machine: Machine,
    pub engines: Vec<EngineInfo>,
    pub results: Vec<Measurement>,
    /// What the reader should know: peers missing, deviations, failures.
    pub notes: Vec<String>,
    /// Every item in report order, with a description (`q1` → `select 1% into temp
    /// (no index)`).
    #[serde(skip)]
    pub items: Vec<(String, String)>,
    /// `--profile`: EXPLAIN ANALYZE per (item, engine).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<(String, String, String)>,
    /// Tables a workload adds below the figures (the optimizer workload's verdicts).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sections: Vec<Section>,
}

/// A table of text a workload adds to its report: printed after the figures, kept
/// in the JSON as its header and rows.
#[derive(Debug, Clone, Serialize)]
pub struct Section {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// Whether a larger value of `unit` is better.
pub fn higher_is_better(unit: &str) -> bool {
    matches!(unit, "tps" | "tpmC")
}

impl Report {
    /// The JSON object `--format json` prints.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).expect("a report serializes");
        let parameters: serde_json::Map<String, serde_json::Value> =
            self.parameters.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect();
        v["parameters"] = serde_json::Value::Object(parameters);
        v
    }

    /// Units in first-appearance order.
    pub fn units(&self) -> Vec<String> {
        let mut units: Vec<String> = Vec::new();
        for m in &self.results {
            if !units.contains(&m.unit) {
                units.push(m.unit.clone());
            }
        }
        units
    }

    fn find(&self, item: &str, engine: &str, unit: &str) -> Option<&Measurement> {
        self.results.iter().find(|m| m.item == item && m.engine == engine && m.unit == unit)
    }

    /// The text tables: one per unit, a row per item, a column per engine, then each
    /// other engine's figure relative to BeeDB's (how many times faster BeeDB is:
    /// peer time / BeeDB time, or BeeDB tps / peer tps).
    pub fn render_table(&self) -> String {
        let mut out = String::new();
        let params: Vec<String> = self.parameters.iter().map(|(k, v)| format!("{k}={v}")).collect();
        out.push_str(&format!("== {}  {}\n", self.workload, params.join("  ")));
        out.push_str(&format!(
            "machine: {}, {} cores, {} GiB, {}\n",
            self.machine.cpu, self.machine.cores, self.machine.memory_gib, self.machine.os
        ));
        let versions: Vec<String> = self.engines.iter().map(|e| format!("{} {}", e.name, e.version)).collect();
        out.push_str(&format!("engines: {}\n", versions.join("; ")));
        let engines: Vec<&str> = self.engines.iter().map(|e| e.name.as_str()).collect();
        let base = engines.iter().copied().find(|e| *e == "beedb").or(engines.first().copied());
        let mut unverified = false;
        let mut timed_out = false;
        for unit in self.units() {
            let what = match unit.as_str() {
                "ms" => "median milliseconds (lower is better)",
                "s" => "median seconds (lower is better)",
                "tps" => "median transactions per second (higher is better)",
                "tpmC" => "median NewOrder transactions per minute (higher is better)",
                "bytes" => "bytes on disk (lower is better)",
                _ => "",
            };
            out.push_str(&format!("\n{unit}: {what}\n"));
            let mut header = vec!["item".to_string()];
            header.extend(engines.iter().map(|e| e.to_string()));
            let others: Vec<&str> = engines.iter().copied().filter(|e| Some(*e) != base).collect();
            if let Some(b) = base {
                header.extend(others.iter().map(|o| format!("{o}÷{b}")));
            }
            header.push("what".into());
            let mut rows = vec![header];
            let mut items: Vec<(String, String)> = self.items.clone();
            for m in &self.results {
                if !items.iter().any(|(i, _)| *i == m.item) {
                    items.push((m.item.clone(), String::new()));
                }
            }
            for (item, description) in &items {
                if !engines.iter().any(|e| self.find(item, e, &unit).is_some()) {
                    continue;
                }
                let mut row = vec![item.clone()];
                for e in &engines {
                    row.push(match self.find(item, e, &unit) {
                        Some(m) if m.timed_out => {
                            timed_out = true;
                            "timeout".into()
                        }
                        Some(m) => {
                            unverified |= !m.verified;
                            format!("{}{}", format_value(m.value, &unit), if m.verified { "" } else { " !" })
                        }
                        None => "-".into(),
                    });
                }
                if let Some(b) = base {
                    let base_value = self.find(item, b, &unit).map(|m| m.value);
                    for o in &others {
                        let other = self.find(item, o, &unit).map(|m| m.value);
                        row.push(match (base_value, other) {
                            (Some(bv), Some(ov)) if bv > 0.0 && ov > 0.0 => {
                                let ratio = if higher_is_better(&unit) { bv / ov } else { ov / bv };
                                format!("{ratio:.2}")
                            }
                            _ => "-".into(),
                        });
                    }
                }
                row.push(description.clone());
                rows.push(row);
            }
            out.push_str(&align(&rows));
        }
        if let Some(b) = base {
            out.push_str(&format!(
                "\nx÷{b}: how many times faster {b} is than x (x's time ÷ {b}'s; for tps, {b}'s ÷ x's); above 1, {b} wins.\n"
            ));
        }
        if unverified {
            out.push_str("!: the answer did not match the other engines' (see the failures below).\n");
        }
        if timed_out {
            out.push_str("timeout: stopped at the statement timeout, no answer (see the failures below).\n");
        }
        for section in &self.sections {
            out.push_str(&format!("\n{}\n", section.title));
            let mut rows = vec![section.header.clone()];
            rows.extend(section.rows.iter().cloned());
            out.push_str(&align(&rows));
        }
        for n in &self.notes {
            out.push_str(&format!("note: {n}\n"));
        }
        for (item, engine, text) in &self.profiles {
            out.push_str(&format!("\n-- EXPLAIN ANALYZE, {item} on {engine}\n{text}\n"));
        }
        out
    }

    /// Every measured run, one per line: `item,engine,unit,run,value`.
    pub fn raw_csv(&self) -> String {
        let mut out = String::from("item,engine,unit,run,value,verified\n");
        for m in &self.results {
            let runs = if m.runs.is_empty() { vec![m.value] } else { m.runs.clone() };
            for (i, v) in runs.iter().enumerate() {
                out.push_str(&format!("{},{},{},{},{},{}\n", csv(&m.item), m.engine, m.unit, i + 1, v, m.verified));
            }
        }
        out
    }
}

fn csv(s: &str) -> String {
    if s.contains([',', '"']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
}

/// A value for the table: three significant figures, bytes in MB.
pub fn format_value(v: f64, unit: &str) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if unit == "bytes" {
        return format!("{:.1} MB", v / 1e6);
    }
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

fn align(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(|r| r.len()).max().unwrap_or(0);
    let widths: Vec<usize> =
        (0..columns).map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            let pad = widths[c] - cell.chars().count();
            let last = c + 1 == r.len();
            if c == 0 || last {
                line.push_str(cell);
                if !last {
                    line.push_str(&" ".repeat(pad));
                }
            } else {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            }
            if !last {
                line.push_str("  ");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(item: &str, engine: &str, value: f64, unit: &str, verified: bool) -> Measurement {
        Measurement { item: item.into(), engine: engine.into(), value, unit: unit.into(), verified, timed_out: false, runs: vec![value] }
    }

    fn report() -> Report {
        Report {
            workload: "wisconsin".into(),
            parameters: vec![("n".into(), "10000".into())],
            machine: Machine { cpu: "cpu".into(), cores: 2, memory_gib: 24.0, os: "os".into() },
            engines: vec![
                EngineInfo { name: "beedb".into(), version: "0.1".into() },
                EngineInfo { name: "sqlite".into(), version: "3".into() },
            ],
            results: vec![m("q1", "beedb", 2.0, "ms", true), m("q1", "sqlite", 5.0, "ms", true), m("q2", "sqlite", 1.0, "ms", false)],
            notes: vec!["a note".into()],
            items: vec![("q1".into(), "select".into()), ("q2".into(), "other".into())],
            profiles: Vec::new(),
            sections: Vec::new(),
        }
    }

    #[test]
    fn table_shows_values_ratios_and_unverified_marks() {
        let t = report().render_table();
        assert!(t.contains("sqlite÷beedb"), "{t}");
        let q1 = t.lines().find(|l| l.starts_with("q1")).unwrap();
        assert!(q1.contains("2.00") && q1.contains("5.00") && q1.contains("2.50"), "{q1}");
        let q2 = t.lines().find(|l| l.starts_with("q2")).unwrap();
        assert!(q2.contains("1.00 !") && q2.contains(" - "), "{q2}");
        assert!(t.contains("note: a note"));
    }

    #[test]
    fn json_has_the_documented_shape() {
        let j = report().to_json();
        assert_eq!(j["workload"], "wisconsin");
        assert_eq!(j["engines"][0]["name"], "beedb");
        assert_eq!(j["results"][0]["item"], "q1");
        assert_eq!(j["results"][0]["unit"], "ms");
        assert_eq!(j["results"][0]["verified"], true);
        assert_eq!(j["results"][2]["verified"], false);
        assert_eq!(j["parameters"]["n"], "10000");
        assert_eq!(j["machine"]["cores"], 2);
    }

    #[test]
    fn tps_ratios_are_inverted() {
        let mut r = report();
        r.results = vec![m("c", "beedb", 300.0, "tps", true), m("c", "sqlite", 100.0, "tps", true)];
        let t = r.render_table();
        assert!(t.lines().find(|l| l.starts_with("c ")).unwrap().contains("3.00"), "{t}");
    }
}
