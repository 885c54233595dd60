//! Redis's glob patterns (KEYS, SCAN MATCH, CONFIG GET): `*`, `?`, `[abc]`, `[^a]`,
//! `[a-z]` and `\` escapes, with Redis's edge cases: a reversed range matches as if
//! swapped, an unclosed `[` closes at the end of the pattern, and a trailing `\`
//! matches itself. Matching backtracks only to the last `*`, so it takes
//! O(pattern × text) steps at worst, never exponential time.

pub fn glob_match(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
    let (mut p, mut t) = (0, 0);
    // After a mismatch, retry from the last star, with it swallowing one more byte.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() {
            if pattern[p] == b'*' {
                while p < pattern.len() && pattern[p] == b'*' {
                    p += 1;
                }
                star = Some((p, t));
                continue;
            }
            if let Some(next) = match_one(pattern, p, text[t], nocase) {
                p = next;
                t += 1;
                continue;
            }
        }
        match star {
            Some((sp, st)) => {
                p = sp;
                t = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    while p < pattern.len() && pattern[p] == b'*' {
        p += 1;
    }
    p == pattern.len()
}

/// If the pattern element starting at `p` (not a star) matches `c`, where the next
/// element starts.
fn match_one(pattern: &[u8], p: usize, c: u8, nocase: bool) -> Option<usize> {
    let eq = |a: u8, b: u8| a == b || (nocase && a.eq_ignore_ascii_case(&b));
    match pattern[p] {
        b'?' => Some(p + 1),
        b'\\' if p + 1 < pattern.len() => eq(pattern[p + 1], c).then_some(p + 2),
        b'[' => {
            let mut i = p + 1;
            let negate = pattern.get(i) == Some(&b'^');
            if negate {
                i += 1;
            }
            let mut hit = false;
            while i < pattern.len() {
                match pattern[i] {
                    b']' => {
                        i += 1;
                        break;
                    }
                    b'\\' if i + 1 < pattern.len() => {
                        hit |= eq(pattern[i + 1], c);
                        i += 2;
                    }
                    lo if i + 2 < pattern.len() && pattern[i + 1] == b'-' => {
                        let hi = pattern[i + 2];
                        let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
                        hit |= (lo..=hi).contains(&c)
                            || (nocase
                                && ((lo..=hi).contains(&c.to_ascii_lowercase())
                                    || (lo..=hi).contains(&c.to_ascii_uppercase())));
                        i += 3;
                    }
                    x => {
                        hit |= eq(x, c);
                        i += 1;
                    }
                }
            }
            (hit != negate).then_some(i)
        }
        x => eq(x, c).then_some(p + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::glob_match;
    use proptest::prelude::*;

    fn m(p: &str, t: &str) -> bool {
        glob_match(p.as_bytes(), t.as_bytes(), false)
    }

    #[test]
    fn redis_pattern_examples() {
        assert!(m("h?llo", "hello") && m("h?llo", "hallo") && !m("h?llo", "hllo"));
        assert!(m("h*llo", "hllo") && m("h*llo", "heeeello") && !m("h*llo", "hellox"));
        assert!(m("h[ae]llo", "hello") && !m("h[ae]llo", "hillo"));
        assert!(m("h[^e]llo", "hallo") && !m("h[^e]llo", "hello"));
        assert!(m("h[a-b]llo", "hbllo") && !m("h[a-b]llo", "hcllo"));
        assert!(m("h[b-a]llo", "hallo"), "reversed range");
        assert!(m("h\\*llo", "h*llo") && !m("h\\*llo", "hello"));
        assert!(m("*", "") && m("**", "x") && !m("?", ""));
        // An unclosed class closes at the end of the pattern, as in Redis.
        assert!(!m("a[", "a[") && !m("a[", "ab") && m("a[b", "ab"));
        assert!(m("abc\\", "abc\\"), "trailing backslash matches itself");
        assert!(m("[\\]]", "]") && m("[a\\-z]", "-") && !m("[a\\-z]", "b"));
        assert!(m("*a*b*c*", "xxaxxbxxcxx") && !m("*a*b*c*", "xxaxxcxxbxx"));
        assert!(glob_match(b"MAXMEM*", b"maxmemory", true));
        assert!(glob_match(b"[A-Z]", b"q", true));
        assert!(!glob_match(b"MAXMEM*", b"maxmemory", false));
    }

    #[test]
    fn many_stars_stay_fast() {
        let pattern = "*a".repeat(50) + "b";
        let text = "a".repeat(5_000);
        assert!(!m(&pattern, &text));
    }

    // Patterns without special bytes match exactly themselves; `*` + literal + `*`
    // is substring search.
    proptest! {
        #[test]
        fn literals_and_substrings(lit in "[a-z0-9]{0,8}", text in "[a-z0-9]{0,16}") {
            prop_assert_eq!(m(&lit, &text), lit == text);
            prop_assert_eq!(m(&format!("*{lit}*"), &text), text.contains(&lit));
            prop_assert_eq!(m(&format!("{lit}*"), &text), text.starts_with(&lit));
            let any: String = lit.chars().map(|_| '?').collect();
            prop_assert_eq!(m(&any, &text), lit.len() == text.len());
        }
    }
}
