//! The `Date` header value (RFC 9110 §5.6.7): IMF-fixdate, always 29 bytes,
//! e.g. `Sun, 06 Nov 1994 08:49:37 GMT`. The runtime reads the clock (once a
//! second is enough) and passes the seconds in; nothing here reads a clock.

use std::fmt;

/// An IMF-fixdate, ready to write.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct HttpDate([u8; 29]);

const DAYS: [&[u8; 3]; 7] = [b"Thu", b"Fri", b"Sat", b"Sun", b"Mon", b"Tue", b"Wed"];
const MONTHS: [&[u8; 3]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];

/// 9999-12-31T23:59:59Z: IMF-fixdate has a four-digit year, so later times
/// are clamped to it.
const MAX_SECS: u64 = 253_402_300_799;

impl HttpDate {
    /// The date `secs` seconds after the Unix epoch (UTC; leap seconds are
    /// not counted, as in Unix time). Times after the year 9999 are clamped
    /// to its last second.
    pub fn from_unix_seconds(secs: u64) -> Self {
        let secs = secs.min(MAX_SECS);
        let days = secs / 86_400;
        let in_day = secs % 86_400;
        let (year, month, day) = civil_from_days(days);
        let mut out = *b"Thu, 01 Jan 1970 00:00:00 GMT";
        // 1970-01-01 was a Thursday, the first entry of DAYS.
        out[..3].copy_from_slice(DAYS[(days % 7) as usize]);
        two_digits(&mut out[5..7], day);
        out[8..11].copy_from_slice(MONTHS[(month - 1) as usize]);
        two_digits(&mut out[12..14], year / 100);
        two_digits(&mut out[14..16], year % 100);
        two_digits(&mut out[17..19], (in_day / 3600) as u32);
        two_digits(&mut out[20..22], (in_day / 60 % 60) as u32);
        two_digits(&mut out[23..25], (in_day % 60) as u32);
        HttpDate(out)
    }

    /// The seconds since the Unix epoch of an HTTP-date as a request
    /// carries it (`If-Modified-Since`, `If-Range`): any of the three forms
    /// a recipient must accept (RFC 9110 §5.6.7), IMF-fixdate (`Sun, 06
    /// Nov 1994 08:49:37 GMT`), the obsolete RFC 850 form (`Sunday,
    /// 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`).
    /// `None` for anything else, an impossible date, or a date before 1970.
    ///
    /// An RFC 850 two-digit year is read as 1970-2069: the RFC's rule
    /// (within 50 years of now) needs a clock, and this module reads none.
    /// A leap second (`:60`) is read as the second before it.
    pub fn parse(text: &[u8]) -> Option<u64> {
        let text = std::str::from_utf8(text).ok()?.trim_matches([' ', '\t']);
        let (year, month, day, time) = if let Some((name, rest)) = text.split_once(", ") {
            let mut parts = rest.split(' ');
            let date = parts.next()?;
            let fields = if name.len() == 3 && DAYS.iter().any(|d| d[..] == *name.as_bytes()) {
                // IMF-fixdate: `06 Nov 1994 08:49:37 GMT`.
                let (month, year) = (parts.next()?, parts.next()?);
                if date.len() != 2 || year.len() != 4 {
                    return None;
                }
                (number(year)?, month_number(month)?, number(date)?)
            } else if LONG_DAYS.contains(&name) {
                // RFC 850: `06-Nov-94 08:49:37 GMT`.
                let mut date = date.split('-');
                let (day, month, year) = (date.next()?, date.next()?, date.next()?);
                if day.len() != 2 || year.len() != 2 || date.next().is_some() {
                    return None;
                }
                let year = number(year)?;
                let year = if year < 70 { 2000 + year } else { 1900 + year };
                (year, month_number(month)?, number(day)?)
            } else {
                return None;
            };
            let time = parts.next()?;
            if parts.next() != Some("GMT") || parts.next().is_some() {
                return None;
            }
            (fields.0, fields.1, fields.2, time)
        } else {
            // asctime: `Sun Nov  6 08:49:37 1994` (the day padded with a
            // space), fixed positions.
            let b = text.as_bytes();
            if b.len() != 24 || b[3] != b' ' || b[7] != b' ' || b[10] != b' ' || b[19] != b' ' {
                return None;
            }
            if !DAYS.iter().any(|d| d[..] == b[..3]) {
                return None;
            }
            let day = text[8..10].trim_start_matches(' ');
            (
                number(&text[20..24])?,
                month_number(&text[4..7])?,
                number(day)?,
                &text[11..19],
            )
        };
        let t = time.as_bytes();
        if t.len() != 8 || t[2] != b':' || t[5] != b':' {
            return None;
        }
        let (hour, minute, second) = (
            number(&time[..2])?,
            number(&time[3..5])?,
            number(&time[6..])?,
        );
        if hour > 23 || minute > 59 || second > 60 || year < 1970 || day == 0 {
            return None;
        }
        if day > days_in_month(year, month) {
            return None;
        }
        let days = days_from_civil(year, month, day);
        Some(days * 86_400 + hour * 3600 + minute * 60 + second.min(59))
    }

    /// The 29 bytes of the date.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The date as text.
    pub fn as_str(&self) -> &str {
        // Built from ASCII only.
        std::str::from_utf8(&self.0).unwrap_or("")
    }
}

impl fmt::Debug for HttpDate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HttpDate({:?})", self.as_str())
    }
}

impl fmt::Display for HttpDate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

const LONG_DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// Digits only (no sign, no spaces), as a number.
fn number(text: &str) -> Option<u64> {
    if text.is_empty() || text.len() > 4 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// 1..=12 for `Jan`..`Dec` (case-sensitive, as the grammar says).
fn month_number(name: &str) -> Option<u64> {
    MONTHS
        .iter()
        .position(|m| m[..] == *name.as_bytes())
        .map(|i| i as u64 + 1)
}

fn days_in_month(year: u64, month: u64) -> u64 {
    let leap = (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400);
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a date of 1970 or later: the inverse of
/// [`civil_from_days`], with the same March-based eras.
fn days_from_civil(year: u64, month: u64, day: u64) -> u64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year / 400;
    let yoe = year % 400;
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn two_digits(out: &mut [u8], n: u32) {
    out[0] = b'0' + (n / 10 % 10) as u8;
    out[1] = b'0' + (n % 10) as u8;
}

/// (year, month 1..=12, day 1..=31) of a day count since 1970-01-01 in the
/// proleptic Gregorian calendar. Counts in 400-year eras starting on March 1
/// (so the leap day ends a year), the usual way to avoid month tables.
fn civil_from_days(days: u64) -> (u32, u32, u32) {
    // Shift the epoch to 0000-03-01: 719_468 days before 1970-01-01.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097; // day of the era, 0..=146_096
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // 0..=399
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of the March-based year
    let mp = (5 * doy + 2) / 153; // month, March = 0
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = (yoe + era * 400) as u32 + u32::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        for (secs, text) in [
            (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
            (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT"),
            (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"),
            (951_868_799, "Tue, 29 Feb 2000 23:59:59 GMT"),
            (1_709_251_199, "Thu, 29 Feb 2024 23:59:59 GMT"),
            (4_107_542_400, "Mon, 01 Mar 2100 00:00:00 GMT"),
            (MAX_SECS, "Fri, 31 Dec 9999 23:59:59 GMT"),
            (u64::MAX, "Fri, 31 Dec 9999 23:59:59 GMT"),
        ] {
            let date = HttpDate::from_unix_seconds(secs);
            assert_eq!(date.as_str(), text, "{secs}");
            assert_eq!(date.as_bytes().len(), 29);
        }
    }

    #[test]
    fn parses_the_three_forms() {
        for text in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
            " Sun, 06 Nov 1994 08:49:37 GMT\t",
        ] {
            assert_eq!(
                HttpDate::parse(text.as_bytes()),
                Some(784_111_777),
                "{text}"
            );
        }
        assert_eq!(
            HttpDate::parse(b"Thursday, 01-Jan-70 00:00:00 GMT"),
            Some(0)
        );
        assert_eq!(
            HttpDate::parse(b"Tue, 29 Feb 2000 23:59:60 GMT"),
            Some(951_868_799),
            "a leap second is the second before"
        );
        for secs in [0, 951_782_400, 1_709_251_199, 4_107_542_400, MAX_SECS] {
            let date = HttpDate::from_unix_seconds(secs);
            assert_eq!(HttpDate::parse(date.as_bytes()), Some(secs));
        }
    }

    #[test]
    fn refuses_what_is_not_an_http_date() {
        for text in [
            "",
            "0",
            "yesterday",
            "Sun, 06 Nov 1994 08:49:37",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 06 nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 94 08:49:37 GMT",
            "Sun, 31 Nov 1994 08:49:37 GMT",
            "Sun, 29 Feb 1900 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:60:00 GMT",
            "Sun, 06 Nov 1994 8:49:37 GMT",
            "Sun, 06 Nov 1969 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT extra",
            "Xyz, 06 Nov 1994 08:49:37 GMT",
            "Funday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov 6 08:49:37 1994",
            "Sun Nov  6 08:49:37 94  ",
            "Sun, +6 Nov 1994 08:49:37 GMT",
        ] {
            assert_eq!(HttpDate::parse(text.as_bytes()), None, "{text:?}");
        }
    }

    #[test]
    fn agrees_with_a_naive_day_count() {
        // Walk every day from 1970 to 2500 with a plain calendar.
        let leap =
            |y: u32| (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400);
        let mut days = 0u64;
        for year in 1970..2500u32 {
            for month in 1..=12u32 {
                let len = match month {
                    2 if leap(year) => 29,
                    2 => 28,
                    4 | 6 | 9 | 11 => 30,
                    _ => 31,
                };
                for day in 1..=len {
                    assert_eq!(civil_from_days(days), (year, month, day));
                    let (y, m, d) = (u64::from(year), u64::from(month), u64::from(day));
                    assert_eq!(days_from_civil(y, m, d), days);
                    assert_eq!(days_in_month(y, m), u64::from(len));
                    days += 1;
                }
            }
        }
    }
}
