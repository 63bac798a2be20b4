//! `weft run` (being written).
/// Arguments of `weft run`.
#[derive(clap::Args)]
pub struct RunArgs {}
/// Runs `weft run`.
pub fn run(_args: RunArgs) -> i32 {
    eprintln!("weft run: not built yet");
    2
}
