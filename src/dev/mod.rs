//! Development tools shipped in the binary: the local Chronos (NAS) emulator.

pub mod chronos;
#[cfg(feature = "testing")]
pub mod mcp_stdio;
