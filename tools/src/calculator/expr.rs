//! The calculator's arithmetic: a small recursive-descent parser that evaluates as it parses.
//!
//! Grammar (lowest precedence first):
//!
//! ```text
//! expr    := term (("+" | "-") term)*
//! term    := unary (("*" | "/" | "%") unary)*
//! unary   := ("+" | "-") unary | power
//! power   := primary (("^" | "**") unary)?        right-associative: 2^3^2 = 2^9
//! primary := number | constant | function "(" expr ("," expr)* ")" | "(" expr ")"
//! ```
//!
//! `-2^2` is `-(2^2) = -4`, as in mathematics. Only numbers, the constants `pi`, `e`, `tau` and
//! a fixed list of functions exist: there are no variables, no assignments and nothing else to
//! run, so an expression from a model can do nothing but compute. Input length and nesting depth
//! are bounded, so no input can exhaust the stack; a result that is not a finite number (a
//! division by zero, `sqrt(-1)`, an overflow) is an error, never `NaN` or `inf`.

use std::fmt;

/// Longest expression accepted, in bytes.
pub(crate) const MAX_LEN: usize = 4096;
/// Deepest nesting of parentheses, unary signs and powers accepted.
const MAX_DEPTH: usize = 64;

/// Why an expression could not be evaluated. `at` is the byte offset the problem was found at.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub(crate) enum ExprError {
    /// The expression is longer than [`MAX_LEN`].
    #[error("the expression is {len} bytes long; at most {MAX_LEN} are accepted")]
    TooLong { len: usize },
    /// Nesting deeper than the parser allows.
    #[error("the expression nests deeper than {MAX_DEPTH} levels at byte {at}")]
    TooDeep { at: usize },
    /// A character or token that does not fit the grammar.
    #[error("unexpected {found} at byte {at}; expected {expected}")]
    Unexpected {
        at: usize,
        found: String,
        expected: &'static str,
    },
    /// An identifier that is neither a constant nor a function.
    #[error(
        "unknown name `{name}` at byte {at}; known constants: pi, e, tau; functions: {}",
        FUNCTION_NAMES
    )]
    UnknownName { at: usize, name: String },
    /// A function called with the wrong number of arguments.
    #[error("`{name}` takes {expected} argument(s), got {got} (at byte {at})")]
    Arity {
        at: usize,
        name: &'static str,
        expected: &'static str,
        got: usize,
    },
    /// A division or remainder by zero.
    #[error("division by zero at byte {at}")]
    DivisionByZero { at: usize },
    /// The result is not a finite number.
    #[error(
        "the result at byte {at} is not a finite number (out of range, or undefined such as sqrt(-1))"
    )]
    NotFinite { at: usize },
}

const FUNCTION_NAMES: &str = "abs, sqrt, cbrt, exp, ln, log (base 10, or log(x, base)), log2, \
log10, sin, cos, tan, asin, acos, atan, atan2, sinh, cosh, tanh, floor, ceil, round, trunc, \
min, max, pow, hypot";

/// Evaluates an arithmetic expression.
pub(crate) fn evaluate(text: &str) -> Result<f64, ExprError> {
    if text.len() > MAX_LEN {
        return Err(ExprError::TooLong { len: text.len() });
    }
    let mut parser = Parser {
        text,
        pos: 0,
        depth: 0,
    };
    let value = parser.expr()?;
    parser.skip_space();
    match parser.peek() {
        None => Ok(value),
        Some(_) => Err(parser.unexpected("an operator or the end of the expression")),
    }
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
    depth: usize,
}

/// What the next token is, for error messages.
struct Found<'a>(Option<&'a str>);

impl fmt::Display for Found<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => f.write_str("end of expression"),
            Some(token) => write!(f, "`{token}`"),
        }
    }
}

impl<'a> Parser<'a> {
    fn rest(&self) -> &str {
        self.text.get(self.pos..).unwrap_or_default()
    }

    fn skip_space(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    /// Consumes `token` (after spaces) if it comes next.
    fn eat(&mut self, token: &str) -> bool {
        self.skip_space();
        if self.rest().starts_with(token) {
            self.pos += token.len();
            true
        } else {
            false
        }
    }

    fn unexpected(&self, expected: &'static str) -> ExprError {
        let found = self.peek().map(|c| {
            let end = self.pos + c.len_utf8();
            self.text.get(self.pos..end).unwrap_or_default()
        });
        ExprError::Unexpected {
            at: self.pos,
            found: Found(found).to_string(),
            expected,
        }
    }

    /// Runs `inner` one nesting level deeper.
    fn nested<T>(
        &mut self,
        inner: impl FnOnce(&mut Self) -> Result<T, ExprError>,
    ) -> Result<T, ExprError> {
        if self.depth >= MAX_DEPTH {
            return Err(ExprError::TooDeep { at: self.pos });
        }
        self.depth += 1;
        let value = inner(self);
        self.depth -= 1;
        value
    }

    fn expr(&mut self) -> Result<f64, ExprError> {
        let mut value = self.term()?;
        loop {
            let at = self.pos;
            if self.eat("+") {
                value = finite(value + self.term()?, at)?;
            } else if self.eat("-") {
                value = finite(value - self.term()?, at)?;
            } else {
                return Ok(value);
            }
        }
    }

    fn term(&mut self) -> Result<f64, ExprError> {
        let mut value = self.unary()?;
        loop {
            self.skip_space();
            let at = self.pos;
            if self.eat("*") {
                value = finite(value * self.unary()?, at)?;
            } else if self.eat("/") {
                let divisor = self.unary()?;
                if divisor == 0.0 {
                    return Err(ExprError::DivisionByZero { at });
                }
                value = finite(value / divisor, at)?;
            } else if self.eat("%") {
                let divisor = self.unary()?;
                if divisor == 0.0 {
                    return Err(ExprError::DivisionByZero { at });
                }
                value = finite(value % divisor, at)?;
            } else {
                return Ok(value);
            }
        }
    }

    fn unary(&mut self) -> Result<f64, ExprError> {
        if self.eat("-") {
            self.nested(|p| Ok(-p.unary()?))
        } else if self.eat("+") {
            self.nested(Self::unary)
        } else {
            self.power()
        }
    }

    fn power(&mut self) -> Result<f64, ExprError> {
        let base = self.primary()?;
        self.skip_space();
        let at = self.pos;
        if self.eat("**") || self.eat("^") {
            let exponent = self.nested(Self::unary)?;
            finite(base.powf(exponent), at)
        } else {
            Ok(base)
        }
    }

    fn primary(&mut self) -> Result<f64, ExprError> {
        self.skip_space();
        let at = self.pos;
        match self.peek() {
            Some('(') => {
                self.pos += 1;
                let value = self.nested(Self::expr)?;
                if !self.eat(")") {
                    return Err(self.unexpected("`)`"));
                }
                Ok(value)
            }
            Some(c) if c.is_ascii_digit() || c == '.' => self.number(),
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                let name = self.identifier();
                self.skip_space();
                if self.peek() == Some('(') {
                    self.pos += 1;
                    let args = self.nested(|p| p.arguments())?;
                    call(name, &args, at).and_then(|value| finite(value, at))
                } else {
                    constant(name).ok_or_else(|| ExprError::UnknownName {
                        at,
                        name: name.to_owned(),
                    })
                }
            }
            _ => Err(self.unexpected("a number, a name or `(`")),
        }
    }

    /// Arguments after the opening parenthesis, through the closing one.
    fn arguments(&mut self) -> Result<Vec<f64>, ExprError> {
        let mut args = Vec::new();
        if self.eat(")") {
            return Ok(args);
        }
        loop {
            args.push(self.expr()?);
            if self.eat(")") {
                return Ok(args);
            }
            if !self.eat(",") {
                return Err(self.unexpected("`,` or `)`"));
            }
        }
    }

    fn identifier(&mut self) -> &'a str {
        let rest = self.rest();
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let start = self.pos;
        self.pos += len;
        let text: &'a str = self.text;
        text.get(start..self.pos).unwrap_or_default()
    }

    fn number(&mut self) -> Result<f64, ExprError> {
        let start = self.pos;
        let bytes = self.rest().as_bytes();
        let mut len = bytes
            .iter()
            .take_while(|b| b.is_ascii_digit() || **b == b'.')
            .count();
        // An exponent: `e` or `E`, an optional sign, at least one digit.
        if matches!(bytes.get(len), Some(b'e' | b'E')) {
            let sign = usize::from(matches!(bytes.get(len + 1), Some(b'+' | b'-')));
            let digits = bytes
                .get(len + 1 + sign..)
                .unwrap_or_default()
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            if digits > 0 {
                len += 1 + sign + digits;
            }
        }
        let literal = self.text.get(start..start + len).unwrap_or_default();
        match literal.parse::<f64>() {
            Ok(value) => {
                self.pos += len;
                finite(value, start)
            }
            Err(_) => Err(ExprError::Unexpected {
                at: start,
                found: format!("`{literal}`"),
                expected: "a number such as 3, 2.5 or 1e-3",
            }),
        }
    }
}

/// `value` if it is a finite number, else [`ExprError::NotFinite`] at `at`.
fn finite(value: f64, at: usize) -> Result<f64, ExprError> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(ExprError::NotFinite { at })
    }
}

fn constant(name: &str) -> Option<f64> {
    match name {
        "pi" => Some(std::f64::consts::PI),
        "e" => Some(std::f64::consts::E),
        "tau" => Some(std::f64::consts::TAU),
        _ => None,
    }
}

fn call(name: &str, args: &[f64], at: usize) -> Result<f64, ExprError> {
    let one = |name: &'static str, f: fn(f64) -> f64| match args {
        [x] => Ok(f(*x)),
        _ => Err(ExprError::Arity {
            at,
            name,
            expected: "1",
            got: args.len(),
        }),
    };
    let two = |name: &'static str, f: fn(f64, f64) -> f64| match args {
        [x, y] => Ok(f(*x, *y)),
        _ => Err(ExprError::Arity {
            at,
            name,
            expected: "2",
            got: args.len(),
        }),
    };
    let many = |name: &'static str, f: fn(f64, f64) -> f64| match args {
        [first, rest @ ..] => Ok(rest.iter().copied().fold(*first, f)),
        [] => Err(ExprError::Arity {
            at,
            name,
            expected: "1 or more",
            got: 0,
        }),
    };
    match name {
        "abs" => one("abs", f64::abs),
        "sqrt" => one("sqrt", f64::sqrt),
        "cbrt" => one("cbrt", f64::cbrt),
        "exp" => one("exp", f64::exp),
        "ln" => one("ln", f64::ln),
        "log" => match args {
            [x] => Ok(x.log10()),
            [x, base] => Ok(x.log(*base)),
            _ => Err(ExprError::Arity {
                at,
                name: "log",
                expected: "1 or 2",
                got: args.len(),
            }),
        },
        "log2" => one("log2", f64::log2),
        "log10" => one("log10", f64::log10),
        "sin" => one("sin", f64::sin),
        "cos" => one("cos", f64::cos),
        "tan" => one("tan", f64::tan),
        "asin" => one("asin", f64::asin),
        "acos" => one("acos", f64::acos),
        "atan" => one("atan", f64::atan),
        "atan2" => two("atan2", f64::atan2),
        "sinh" => one("sinh", f64::sinh),
        "cosh" => one("cosh", f64::cosh),
        "tanh" => one("tanh", f64::tanh),
        "floor" => one("floor", f64::floor),
        "ceil" => one("ceil", f64::ceil),
        "round" => one("round", f64::round),
        "trunc" => one("trunc", f64::trunc),
        "min" => many("min", f64::min),
        "max" => many("max", f64::max),
        "pow" => two("pow", f64::powf),
        "hypot" => two("hypot", f64::hypot),
        other => Err(ExprError::UnknownName {
            at,
            name: other.to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn eval(text: &str) -> f64 {
        evaluate(text).unwrap_or_else(|err| panic!("{text}: {err}"))
    }

    #[test]
    fn precedence_and_associativity() {
        assert_eq!(eval("1 + 2 * 3"), 7.0);
        assert_eq!(eval("(1 + 2) * 3"), 9.0);
        assert_eq!(eval("10 - 4 - 3"), 3.0);
        assert_eq!(eval("100 / 10 / 5"), 2.0);
        assert_eq!(eval("2 ^ 3 ^ 2"), 512.0);
        assert_eq!(eval("2 ** 3 ** 2"), 512.0);
        assert_eq!(eval("-2 ^ 2"), -4.0);
        assert_eq!(eval("2 ^ -1"), 0.5);
        assert_eq!(eval("--3"), 3.0);
        assert_eq!(eval("+4 * -2"), -8.0);
        assert_eq!(eval("7 % 4"), 3.0);
        assert_eq!(eval("2*3**2"), 18.0);
    }

    #[test]
    fn numbers_constants_and_functions() {
        assert_eq!(eval("1.5e3 + .5"), 1500.5);
        assert_eq!(eval("2E-2"), 0.02);
        assert_eq!(eval("pi"), std::f64::consts::PI);
        assert_eq!(eval("sqrt(16) + abs(-2)"), 6.0);
        assert_eq!(eval("log(1000)"), 3.0);
        assert_eq!(eval("log(8, 2)"), 3.0);
        assert_eq!(eval("ln(e)"), 1.0);
        assert_eq!(eval("max(1, 7, 3) - min(4, 2)"), 5.0);
        assert_eq!(eval("round(2.5) + floor(-0.5) + ceil(0.2)"), 3.0);
        assert_eq!(eval("hypot(3, 4)"), 5.0);
        assert!((eval("sin(pi / 2)") - 1.0).abs() < 1e-12);
        assert_eq!(eval(" ( 1 +\t2 ) "), 3.0);
    }

    #[test]
    fn errors_say_what_and_where() {
        assert_eq!(evaluate("1 / 0"), Err(ExprError::DivisionByZero { at: 2 }));
        assert_eq!(evaluate("5 % 0"), Err(ExprError::DivisionByZero { at: 2 }));
        assert!(matches!(
            evaluate("sqrt(-1)"),
            Err(ExprError::NotFinite { at: 0 })
        ));
        assert!(matches!(
            evaluate("10 ^ 400"),
            Err(ExprError::NotFinite { .. })
        ));
        assert_eq!(
            evaluate("x + 1"),
            Err(ExprError::UnknownName {
                at: 0,
                name: "x".into()
            })
        );
        assert_eq!(
            evaluate("system(1)"),
            Err(ExprError::UnknownName {
                at: 0,
                name: "system".into()
            })
        );
        assert!(matches!(
            evaluate("pow(2)"),
            Err(ExprError::Arity {
                name: "pow",
                got: 1,
                ..
            })
        ));
        let err = evaluate("(1 + 2").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unexpected end of expression at byte 6; expected `)`"
        );
        let err = evaluate("1 + * 2").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unexpected `*` at byte 4; expected a number, a name or `(`"
        );
        assert!(matches!(
            evaluate("1 2"),
            Err(ExprError::Unexpected { at: 2, .. })
        ));
        assert!(matches!(
            evaluate("1..2"),
            Err(ExprError::Unexpected { at: 0, .. })
        ));
        assert!(matches!(
            evaluate(""),
            Err(ExprError::Unexpected { at: 0, .. })
        ));
        assert!(matches!(
            evaluate("__import__('os')"),
            Err(ExprError::Unexpected { .. })
        ));
    }

    #[test]
    fn nesting_and_length_are_bounded() {
        let deep = format!("{}1{}", "(".repeat(1000), ")".repeat(1000));
        assert!(matches!(evaluate(&deep), Err(ExprError::TooDeep { .. })));
        let signs = format!("{}1", "-".repeat(2000));
        assert!(matches!(evaluate(&signs), Err(ExprError::TooDeep { .. })));
        let powers = vec!["1"; 2000].join("^");
        assert!(matches!(
            evaluate(&powers),
            Err(ExprError::TooLong { .. }) | Err(ExprError::TooDeep { .. })
        ));
        let long = "1+".repeat(MAX_LEN);
        assert!(matches!(evaluate(&long), Err(ExprError::TooLong { .. })));
        let fine = format!("{}1{}", "(".repeat(60), ")".repeat(60));
        assert_eq!(eval(&fine), 1.0);
    }

    proptest! {
        /// Any input at all: an answer or an error, never a panic, and never a non-finite answer.
        #[test]
        fn never_panics(text in "\\PC{0,64}") {
            if let Ok(value) = evaluate(&text) {
                prop_assert!(value.is_finite());
            }
        }

        /// Inputs made of the grammar's own characters reach deeper into the parser.
        #[test]
        fn grammar_soup_never_panics(text in "[0-9. +*/%^()e,-]{0,80}|[a-z0-9(),.+-]{0,40}") {
            if let Ok(value) = evaluate(&text) {
                prop_assert!(value.is_finite());
            }
        }

        /// Integer arithmetic agrees with Rust's.
        #[test]
        fn agrees_with_integer_arithmetic(a in -1000i64..1000, b in -1000i64..1000, c in 1i64..100) {
            let text = format!("{a} + {b} * {c} - ({a} - {b})");
            let expected = (a + b * c - (a - b)) as f64;
            prop_assert_eq!(evaluate(&text), Ok(expected));
        }
    }
}
