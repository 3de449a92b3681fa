//! A job run for its partial aggregates: map and combine as the job says,
//! and the combiner's state of each key as the output, with no reduce
//! (what `stream map` hands the engine's shuffle).

use crate::combine::Combiner;
use crate::job::{ContainerKind, Emit, Job, KeyHint, MapResult, Records, Split, StateOf};
use crate::spill::Codec;

/// `J` with its reduce replaced by "keep the state".
pub(super) struct Partial<'a, J>(pub(super) &'a J);

/// `C` whose `reduce` receives the state itself.
#[derive(Clone, Default)]
pub(super) struct KeepState<C>(C);

impl<V, C: Combiner<V>> Combiner<V> for KeepState<C> {
    type State = C::State;
    type Reduced<'a>
        = C::State
    where
        V: 'a;
    const FOLDS: bool = C::FOLDS;

    fn init(&self, v: V) -> C::State {
        self.0.init(v)
    }
    fn add(&self, state: &mut C::State, v: V) {
        self.0.add(state, v)
    }
    fn merge(&self, state: &mut C::State, other: C::State) {
        self.0.merge(state, other)
    }
    fn finish<O>(&self, state: C::State, reduce: impl FnOnce(C::State) -> O) -> O {
        reduce(state)
    }
}

impl<J: Job> Job for Partial<'_, J> {
    type Key = J::Key;
    type Value = J::Value;
    type Combiner = KeepState<J::Combiner>;
    type Out = StateOf<J>;

    fn records(&self) -> Records {
        self.0.records()
    }
    fn keys(&self) -> KeyHint {
        self.0.keys()
    }
    fn container(&self) -> ContainerKind {
        self.0.container()
    }
    fn combiner(&self) -> Self::Combiner {
        KeepState(self.0.combiner())
    }
    fn map<E: Emit<J::Key, J::Value>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        self.0.map(split, emit)
    }
    fn reduce(&self, _key: &J::Key, state: StateOf<J>) -> StateOf<J> {
        state
    }
    fn codec(&self) -> Option<Codec<J::Key, StateOf<J>>> {
        self.0.codec()
    }
    fn pipelinable(&self) -> bool {
        self.0.pipelinable()
    }
}
