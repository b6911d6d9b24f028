//! Who may do what: the bottom of the API. Every credential kind resolves
//! here into one `Caller` (`credentials`: API keys full and read-only, the
//! query-string key, bearer access tokens of a sign-in session, embed
//! tokens, signed tile templates, signed asset links, the metrics token),
//! what each may call is decided by route (`routes`), and every
//! visibility and capability decision on a dataset or a map is one
//! function in `policy`, with the one SQL condition the listings use.
//! Resource modules depend on this module, never the reverse.
//!
//! Credentials read elsewhere, by the one route that takes each: refresh
//! tokens and sign-in answers (`auth`); download tokens are minted by
//! `auth` and read by the download route (`datasets::download`).
mod caller;
pub mod credentials;
pub mod datasets;
mod embed;
pub mod policy;
pub mod routes;
mod signatures;
pub mod signed_assets;
pub mod signed_tiles;

pub use caller::{Caller, Capability, KeyScope, User, bearer_token};
