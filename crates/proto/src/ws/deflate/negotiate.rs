//! Server-side permessage-deflate negotiation (RFC 7692 §5, §7.1).
//!
//! The client sends offers in preference order; we accept the first
//! permessage-deflate offer whose parameters are well-formed and that we can
//! honour, and decline (skip) the others. Offers of other extensions are
//! ignored.
//!
//! Window bits: zlib cannot produce raw deflate with an 8-bit window (it used
//! to silently use 9, current zlib and zlib-rs refuse), so an offer that
//! demands `server_max_window_bits=8` is declined: we could not keep the
//! promise. `client_max_window_bits=8` is different: it limits the *client's*
//! compressor, and an inflater with a larger window than the compressor's is
//! always correct, because back-references never reach further than the
//! compressor's window. We therefore accept 8 for the client and inflate with
//! a 9-bit window, which also works with clients whose zlib quietly turned 8
//! into 9.

use super::{DeflateConfig, DeflateParams};
use crate::ws::extensions::{parse_extensions, MalformedExtensions};

/// The extension token RFC 7692 registers.
const NAME: &str = "permessage-deflate";

/// Picks the first acceptable permessage-deflate offer from the
/// `Sec-WebSocket-Extensions` header values (one entry per header line).
///
/// Returns `Ok(None)` when no offer is acceptable (the connection proceeds
/// uncompressed), or the agreed parameters and the value of the
/// `Sec-WebSocket-Extensions` response header. A header value that does not
/// follow the RFC 6455 §9.1 grammar is an error (respond 400); a syntactically
/// valid offer with bad parameters is merely declined.
///
/// Out-of-range window bits in `cfg` are clamped (server 9..=15, client
/// 8..=15) rather than rejected: the config is ours, and clamping keeps a
/// typo from disabling compression.
pub fn negotiate<S: AsRef<str>>(
    offers_header_values: &[S],
    cfg: &DeflateConfig,
) -> Result<Option<(DeflateParams, String)>, MalformedExtensions> {
    // Parse everything first: a malformed header is an error even if an
    // acceptable offer precedes the malformed part.
    let mut offers = Vec::new();
    for value in offers_header_values {
        offers.extend(parse_extensions(value.as_ref())?);
    }
    Ok(offers
        .iter()
        .filter(|offer| offer.name.eq_ignore_ascii_case(NAME))
        .find_map(|offer| accept(&offer.params, cfg)))
}

/// What one offer asked for, after syntax checks.
#[derive(Default)]
struct Offer {
    server_no_context_takeover: bool,
    client_no_context_takeover: bool,
    server_max_window_bits: Option<u8>,
    /// `Some(None)`: offered without a value ("I support the parameter").
    client_max_window_bits: Option<Option<u8>>,
}

/// Reads the parameters of one offer; `None` declines it (unknown,
/// duplicated or badly valued parameter).
fn read_offer(params: &[(String, Option<String>)]) -> Option<Offer> {
    let mut offer = Offer::default();
    for (name, value) in params {
        let name = name.to_ascii_lowercase();
        match (name.as_str(), value) {
            ("server_no_context_takeover", None) if !offer.server_no_context_takeover => {
                offer.server_no_context_takeover = true;
            }
            ("client_no_context_takeover", None) if !offer.client_no_context_takeover => {
                offer.client_no_context_takeover = true;
            }
            ("server_max_window_bits", Some(v)) if offer.server_max_window_bits.is_none() => {
                offer.server_max_window_bits = Some(parse_window_bits(v)?);
            }
            ("client_max_window_bits", v) if offer.client_max_window_bits.is_none() => {
                let bits = match v {
                    Some(v) => Some(parse_window_bits(v)?),
                    None => None,
                };
                offer.client_max_window_bits = Some(bits);
            }
            _ => return None,
        }
    }
    Some(offer)
}

/// RFC 7692 §7.1.2: a decimal integer 8..=15 without leading zeros.
fn parse_window_bits(value: &str) -> Option<u8> {
    if value.is_empty() || value.starts_with('0') || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value
        .parse::<u8>()
        .ok()
        .filter(|bits| (8..=15).contains(bits))
}

fn accept(
    params: &[(String, Option<String>)],
    cfg: &DeflateConfig,
) -> Option<(DeflateParams, String)> {
    let offer = read_offer(params)?;
    let our_server_bits = cfg.server_max_window_bits.clamp(9, 15);
    let our_client_bits = cfg.client_max_window_bits.clamp(8, 15);

    let server_bits = our_server_bits.min(offer.server_max_window_bits.unwrap_or(15));
    if server_bits < 9 {
        return None; // the client demands an 8-bit window we cannot produce
    }
    let client_bits = match offer.client_max_window_bits {
        // Without the parameter the client may use any window: assume 15 and
        // do not mention it (RFC 7692 §7.1.2.2 forbids it in the response).
        None => 15,
        Some(None) => our_client_bits,
        Some(Some(limit)) => our_client_bits.min(limit),
    };
    let agreed = DeflateParams {
        server_no_context_takeover: offer.server_no_context_takeover
            || cfg.server_no_context_takeover,
        client_no_context_takeover: offer.client_no_context_takeover
            || cfg.client_no_context_takeover,
        server_max_window_bits: server_bits,
        client_max_window_bits: client_bits,
        threshold: cfg.threshold,
        level: cfg.level.min(9),
    };

    let mut response = String::from(NAME);
    if agreed.server_no_context_takeover {
        response.push_str("; server_no_context_takeover");
    }
    if agreed.client_no_context_takeover {
        response.push_str("; client_no_context_takeover");
    }
    if offer.server_max_window_bits.is_some() || server_bits < 15 {
        response.push_str(&format!("; server_max_window_bits={server_bits}"));
    }
    let client_bits_offered_value = matches!(offer.client_max_window_bits, Some(Some(_)));
    if offer.client_max_window_bits.is_some() && (client_bits < 15 || client_bits_offered_value) {
        response.push_str(&format!("; client_max_window_bits={client_bits}"));
    }
    Some((agreed, response))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7692 defaults on our side, to test the client's influence alone.
    fn rfc_defaults() -> DeflateConfig {
        DeflateConfig {
            server_no_context_takeover: false,
            client_no_context_takeover: false,
            ..DeflateConfig::default()
        }
    }

    fn response(offers: &[&str], cfg: &DeflateConfig) -> Option<String> {
        negotiate(offers, cfg).unwrap().map(|(_, r)| r)
    }

    #[test]
    fn plain_offer_and_browser_offer() {
        let cfg = rfc_defaults();
        assert_eq!(
            response(&["permessage-deflate"], &cfg).as_deref(),
            Some("permessage-deflate")
        );
        let (params, r) = negotiate(&["permessage-deflate; client_max_window_bits"], &cfg)
            .unwrap()
            .unwrap();
        assert_eq!(r, "permessage-deflate");
        assert_eq!(params.client_max_window_bits, 15);
        assert_eq!(params.server_max_window_bits, 15);
        assert!(!params.server_no_context_takeover && !params.client_no_context_takeover);
    }

    #[test]
    fn default_config_asks_for_no_context_takeover() {
        let (params, r) = negotiate(
            &["permessage-deflate; client_max_window_bits"],
            &DeflateConfig::default(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            r,
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover"
        );
        assert!(params.server_no_context_takeover && params.client_no_context_takeover);
    }

    #[test]
    fn honours_client_parameters() {
        let cfg = rfc_defaults();
        let (p, r) = negotiate(
            &["permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10; client_max_window_bits=11"],
            &cfg,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            r,
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10; client_max_window_bits=11"
        );
        assert_eq!(
            (p.server_max_window_bits, p.client_max_window_bits),
            (10, 11)
        );
        assert!(p.server_no_context_takeover && p.client_no_context_takeover);
    }

    #[test]
    fn our_window_limits_apply() {
        let cfg = DeflateConfig {
            server_max_window_bits: 12,
            client_max_window_bits: 10,
            ..rfc_defaults()
        };
        // Client did not offer client_max_window_bits: we must not send it.
        assert_eq!(
            response(&["permessage-deflate"], &cfg).as_deref(),
            Some("permessage-deflate; server_max_window_bits=12")
        );
        assert_eq!(
            response(
                &["permessage-deflate; client_max_window_bits; server_max_window_bits=14"],
                &cfg
            )
            .as_deref(),
            Some("permessage-deflate; server_max_window_bits=12; client_max_window_bits=10")
        );
    }

    #[test]
    fn window_bits_eight() {
        let cfg = rfc_defaults();
        // We cannot compress with an 8-bit window: decline, fall back to the next offer.
        assert_eq!(
            response(&["permessage-deflate; server_max_window_bits=8"], &cfg),
            None
        );
        assert_eq!(
            response(
                &["permessage-deflate; server_max_window_bits=8, permessage-deflate"],
                &cfg
            )
            .as_deref(),
            Some("permessage-deflate")
        );
        // The client may compress with 8; we inflate with 9.
        let (p, r) = negotiate(&["permessage-deflate; client_max_window_bits=8"], &cfg)
            .unwrap()
            .unwrap();
        assert_eq!(r, "permessage-deflate; client_max_window_bits=8");
        assert_eq!(p.client_max_window_bits, 8);
    }

    #[test]
    fn bad_offers_are_declined() {
        let cfg = rfc_defaults();
        for offer in [
            "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
            "permessage-deflate; server_no_context_takeover=1",
            "permessage-deflate; client_no_context_takeover=\"\"",
            "permessage-deflate; server_max_window_bits",
            "permessage-deflate; server_max_window_bits=16",
            "permessage-deflate; server_max_window_bits=7",
            "permessage-deflate; server_max_window_bits=010",
            "permessage-deflate; server_max_window_bits=1a",
            "permessage-deflate; client_max_window_bits=0",
            "permessage-deflate; client_max_window_bits; client_max_window_bits=9",
            "permessage-deflate; unknown_param",
        ] {
            assert_eq!(response(&[offer], &cfg), None, "{offer}");
        }
    }

    #[test]
    fn quoted_values_and_other_extensions() {
        let cfg = rfc_defaults();
        assert_eq!(
            response(
                &[
                    "x-webkit-deflate-frame",
                    "foo, permessage-deflate; server_max_window_bits=\"10\""
                ],
                &cfg
            )
            .as_deref(),
            Some("permessage-deflate; server_max_window_bits=10")
        );
        assert_eq!(response(&["x-webkit-deflate-frame"], &cfg), None);
        assert_eq!(response(&[], &cfg), None);
    }

    #[test]
    fn malformed_header_is_an_error() {
        let cfg = rfc_defaults();
        assert_eq!(
            negotiate(&["permessage-deflate, ;"], &cfg),
            Err(MalformedExtensions)
        );
        assert_eq!(
            negotiate(&["permessage-deflate", "a b"], &cfg),
            Err(MalformedExtensions)
        );
    }

    #[test]
    fn config_values_are_clamped() {
        let cfg = DeflateConfig {
            server_max_window_bits: 3,
            client_max_window_bits: 99,
            level: 42,
            ..rfc_defaults()
        };
        let (p, _) = negotiate(&["permessage-deflate; client_max_window_bits"], &cfg)
            .unwrap()
            .unwrap();
        assert_eq!(
            (p.server_max_window_bits, p.client_max_window_bits, p.level),
            (9, 15, 9)
        );
    }
}
