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
                    days += 1;
                }
            }
        }
    }
}
