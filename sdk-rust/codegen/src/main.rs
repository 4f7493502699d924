//! Regenerates the protocol's Rust types, `sdk-rust/src/gen/polystreams.v1alpha1.rs`,
//! from `proto/` with prost-build (which runs `protoc`). Run by `make generate`;
//! the output is committed and `make check-generated` fails when it is stale.

use std::path::Path;

fn main() {
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let proto = sdk.join("../proto");
    let out = sdk.join("src/gen");
    prost_build::Config::new()
        .out_dir(&out)
        .compile_protos(&[proto.join("polystreams/v1alpha1/engine.proto")], &[proto])
        .unwrap_or_else(|e| {
            eprintln!("polystreams-codegen: {e}");
            std::process::exit(1);
        });
}
