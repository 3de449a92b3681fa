//! Arguments that the `ember` command and `ember-bench` both take.

use clap::Args;
use ember_apps::kmeans::Params;

/// The clustering parameters of `ember kmeans` and `ember-bench kmeans`.
#[derive(Args, Clone, Copy, Debug)]
pub struct KmeansArgs {
    /// Number of clusters (the first this many points are the initial means).
    #[arg(long, short = 'k', default_value_t = Params::default().clusters)]
    pub clusters: usize,
    /// Stop after this many iterations if not converged.
    #[arg(long, default_value_t = Params::default().max_iterations)]
    pub max_iter: usize,
}

impl KmeansArgs {
    /// The library's parameters.
    pub fn params(&self) -> Params {
        Params {
            clusters: self.clusters,
            max_iterations: self.max_iter,
        }
    }
}
