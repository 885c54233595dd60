//! Sorted sets.

/// A score as Redis 7.0 replies with it: C's `%.17g` (17 significant digits, trailing
/// zeros dropped, an exponent below 1e-4 or from 1e17), `inf` and `-inf`.
pub fn format_score(x: f64) -> String {
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let scientific = format!("{x:.16e}");
    let (mantissa, exponent) = scientific.split_once('e').expect("{:e} has an exponent");
    let exponent: i32 = exponent.parse().expect("{:e}'s exponent is a number");
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..17).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exponent.abs())
    } else {
        trim(&format!("{x:.*}", (16 - exponent) as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_print_as_printf_g17_does() {
        for (x, text) in [
            (1.0, "1"),
            (1.1, "1.1000000000000001"),
            (-2.5, "-2.5"),
            (0.1, "0.10000000000000001"),
            (1e-5, "1.0000000000000001e-05"),
            (0.0001, "0.0001"),
            (1e17, "1e+17"),
            (12345678901234567.0, "12345678901234568"),
            (1.5e300, "1.5000000000000001e+300"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (-0.0, "-0"),
        ] {
            assert_eq!(format_score(x), text, "{x}");
        }
    }
}
