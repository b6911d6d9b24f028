//! How deep a CQL2 filter nests, read from its characters before any
//! parser runs: the `cql2` crate recurses once per bracket, per prefix
//! operator (`NOT`, unary minus) and per right-associative comparison, so
//! a short text of 1,500 `NOT`s would overflow a worker's stack. The count
//! is an upper bound of that recursion; `AND`, `OR` and commas end the
//! prefix operators and comparisons before them, so long flat lists of
//! conditions stay cheap.

/// The deepest nesting of a cql2-text filter: brackets, and within each
/// the prefix operators and comparisons not yet closed.
pub fn of_text(text: &str) -> usize {
    let mut scan = Scan::default();
    let mut chars = text.char_indices().peekable();
    // Whether the previous token ended an operand, so that `-` is binary.
    let mut after_operand = false;
    while let Some((start, c)) = chars.next() {
        match c {
            '\'' | '"' => {
                // A quoted string or name; a doubled quote stands for itself.
                loop {
                    match chars.next() {
                        Some((_, q)) if q == c => {
                            if chars.peek().is_some_and(|(_, n)| *n == c) {
                                chars.next();
                            } else {
                                break;
                            }
                        }
                        Some(_) => {}
                        None => break,
                    }
                }
                after_operand = true;
            }
            '(' | '[' => {
                scan.open();
                after_operand = false;
            }
            ')' | ']' => {
                scan.close();
                after_operand = true;
            }
            ',' => {
                scan.end_terms();
                after_operand = false;
            }
            '-' if !after_operand => scan.prefix(),
            '=' | '<' | '>' | '!' => {
                // `<=`, `>=`, `<>` and `!=` are one comparison.
                if chars.peek().is_some_and(|(_, n)| matches!(n, '=' | '>')) {
                    chars.next();
                }
                scan.prefix();
                after_operand = false;
            }
            c if c.is_alphabetic() || c == '_' => {
                let mut end = start + c.len_utf8();
                while let Some((i, n)) = chars.peek().copied() {
                    if n.is_alphanumeric() || matches!(n, '_' | '.' | ':') {
                        end = i + n.len_utf8();
                        chars.next();
                    } else {
                        break;
                    }
                }
                let word = &text[start..end];
                if ["and", "or"].iter().any(|k| word.eq_ignore_ascii_case(k)) {
                    scan.end_terms();
                    after_operand = false;
                } else if ["not", "like", "in", "between", "is"]
                    .iter()
                    .any(|k| word.eq_ignore_ascii_case(k))
                {
                    scan.prefix();
                    after_operand = false;
                } else {
                    after_operand = true;
                }
            }
            c if c.is_whitespace() => {}
            '+' | '*' | '/' | '%' | '^' | '-' => after_operand = false,
            _ => after_operand = true,
        }
    }
    scan.deepest
}

/// The deepest nesting of a cql2-json filter: its arrays and objects
/// (each operation is an object holding an `args` array).
pub fn of_json(text: &str) -> usize {
    let mut scan = Scan::default();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                while let Some(s) = chars.next() {
                    match s {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '[' | '{' => scan.open(),
            ']' | '}' => scan.close(),
            _ => {}
        }
    }
    scan.deepest
}

/// Open brackets, each with the prefix operators pending in it.
#[derive(Default)]
struct Scan {
    /// Pending operators of each open bracket, the outermost first; the
    /// text's top level is `pending`.
    open: Vec<usize>,
    pending: usize,
    depth: usize,
    deepest: usize,
}

impl Scan {
    fn note(&mut self) {
        self.deepest = self.deepest.max(self.depth);
    }

    fn open(&mut self) {
        self.open.push(self.pending);
        self.pending = 0;
        self.depth += 1;
        self.note();
    }

    fn close(&mut self) {
        self.depth -= self.pending.min(self.depth);
        if let Some(outer) = self.open.pop() {
            self.depth = self.depth.saturating_sub(1);
            self.pending = outer;
        } else {
            self.pending = 0;
        }
    }

    fn prefix(&mut self) {
        self.pending += 1;
        self.depth += 1;
        self.note();
    }

    fn end_terms(&mut self) {
        self.depth -= self.pending.min(self.depth);
        self.pending = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brackets_and_prefix_operators_count_strings_do_not() {
        assert_eq!(of_text("pop = 1"), 1);
        assert_eq!(of_text("((pop = 1))"), 3);
        assert_eq!(of_text(&format!("{}pop = 1", "NOT ".repeat(1500))), 1501);
        assert_eq!(of_text(&format!("pop = {}1", "-".repeat(2000))), 2001);
        assert_eq!(of_text(&format!("pop = {}1", "- ".repeat(2000))), 2001);
        assert_eq!(of_text(&"1 = ".repeat(2000)), 2000);
        assert_eq!(of_text(&format!("name = '{}'", "(".repeat(500))), 1);
        assert_eq!(of_text(&format!("\"{}\" = 1", "((".repeat(500))), 1);
        assert_eq!(of_text("name = 'it''s (' AND pop - 1 > -2"), 2);
    }

    #[test]
    fn long_flat_conditions_stay_shallow() {
        let chain = vec!["NOT pop = 1"; 500].join(" AND ");
        assert_eq!(of_text(&chain), 2);
        let list: Vec<String> = (0..999).map(|i| format!("-{i}")).collect();
        assert_eq!(of_text(&format!("pop IN ({})", list.join(", "))), 3);
        assert_eq!(of_text("NOT (a = 1 OR NOT (b = -2))"), 6);
    }

    #[test]
    fn json_counts_arrays_and_objects_outside_strings() {
        assert_eq!(of_json(r#"{"op": "=", "args": [{"property": "pop"}, 1]}"#), 3);
        assert_eq!(of_json(r#"{"op": "=", "args": [{"property": "p[{"}, "]]]\"[[["]}"#), 3);
    }
}
