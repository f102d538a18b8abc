//! Links the addon as Node-API expects (napi-build).
fn main() {
    napi_build::setup();
}
