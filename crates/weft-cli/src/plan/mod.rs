//! `weft plan` (being written).
/// Arguments of `weft plan`.
#[derive(clap::Args)]
pub struct PlanArgs {}
/// Runs `weft plan`.
pub fn run(_args: PlanArgs) -> i32 {
    eprintln!("weft plan: not built yet");
    2
}
