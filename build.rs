//! Links the `hermes-zero` binary as a non-PIE executable on Linux (BENCHMARKS.md §5, "what
//! each choice bought"): the linker resolves the ~55,000 pointer relocations of a PIE build
//! once, at link time, instead of the dynamic loader at every exec. The binary loses 1.3 MB
//! of relocation table, every start skips that relocation pass, and the 1.5 MB of pointer
//! tables (`.data.rel.ro`) stay clean pages shared with the page cache instead of private
//! copies. The cost: the executable's own image is at a fixed address (no ASLR for it; the
//! stack, heap, shared libraries and mmaps stay randomised). Remove this file to get a PIE.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
