//! Records to skip, named by file and line (`--skip-list FILE`): the corpus's known
//! failures, each with its reason.
//!
//! One entry per line: `path-suffix:line  reason`. `path-suffix` matches a test file
//! whose path ends with it at a `/` boundary (`select1.test` matches
//! `/work/shared/sqllogictest/select1.test`); `line` is the 1-based line of the
//! record's `statement`/`query` line (not of its `skipif`/`onlyif` lines), or `*` for
//! every record of the file. The reason is free text. Blank lines and lines starting
//! with `#` are ignored.

use std::collections::HashMap;
use std::path::Path;

/// A parsed skip list.
#[derive(Debug, Clone, Default)]
pub struct SkipList {
    /// Line (0 = whole file) → path suffixes.
    entries: HashMap<u32, Vec<String>>,
    len: usize,
}

impl SkipList {
    pub fn load(path: &Path) -> Result<SkipList, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read skip list {}: {e}", path.display()))?;
        SkipList::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn parse(text: &str) -> Result<SkipList, String> {
        let mut list = SkipList::default();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let spec = line.split_whitespace().next().unwrap_or(line);
            let (suffix, line_text) = spec.rsplit_once(':').ok_or_else(|| {
                format!("line {}: expected `path-suffix:line  reason`", index + 1)
            })?;
            let record_line = if line_text == "*" {
                0
            } else {
                line_text
                    .parse::<u32>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("line {}: bad line number `{line_text}`", index + 1))?
            };
            if suffix.is_empty() {
                return Err(format!("line {}: empty path", index + 1));
            }
            list.entries
                .entry(record_line)
                .or_default()
                .push(suffix.replace('\\', "/"));
            list.len += 1;
        }
        Ok(list)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the record at `line` of `file` is on the list.
    pub fn contains(&self, file: &str, line: u32) -> bool {
        let matches = |suffixes: &Vec<String>| suffixes.iter().any(|s| path_ends_with(file, s));
        self.entries.get(&line).is_some_and(matches) || self.entries.get(&0).is_some_and(matches)
    }
}

fn path_ends_with(path: &str, suffix: &str) -> bool {
    let path = path.strip_prefix("./").unwrap_or(path);
    let suffix = suffix.strip_prefix("./").unwrap_or(suffix);
    path == suffix || (path.ends_with(suffix) && path[..path.len() - suffix.len()].ends_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_suffix_at_component_boundary() {
        let list = SkipList::parse(
            "# comment\n\nrandom/expr/slt_good_0.test:120  integer division\nselect1.test:*\n",
        )
        .unwrap();
        assert_eq!(list.len(), 2);
        assert!(list.contains("/x/sqllogictest/random/expr/slt_good_0.test", 120));
        assert!(!list.contains("/x/sqllogictest/random/expr/slt_good_0.test", 121));
        assert!(!list.contains("/x/sqllogictest/random/xexpr/slt_good_0.test", 120));
        assert!(list.contains("select1.test", 5));
        assert!(!list.contains("/a/xselect1.test", 5));
        assert!(SkipList::parse("nocolon reason").is_err());
        assert!(SkipList::parse("a.test:x reason").is_err());
    }
}
