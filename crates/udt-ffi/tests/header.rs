//! The checked-in C header `include/udt_c.h` must be what cbindgen generates from this crate
//! now: this test fails when it is stale (so CI does), and rewrites it with `UDT_BLESS=1`.

use std::path::Path;

#[test]
fn checked_in_header_is_current() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("cbindgen.toml must parse");
    let bindings = cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen must generate the header");
    let mut fresh = Vec::new();
    bindings.write(&mut fresh);
    let fresh = String::from_utf8(fresh).expect("header is UTF-8");
    let path = crate_dir.join("include/udt_c.h");
    if std::env::var_os("UDT_BLESS").is_some() {
        std::fs::write(&path, &fresh).expect("write header");
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        current == fresh,
        "{} is stale: regenerate it with `UDT_BLESS=1 cargo test -p udt-ffi --test header`",
        path.display()
    );
}
