//! Message matching, as a pure data structure: the queue of posted receives and the queue of
//! unexpected messages, searched in arrival order so MPI's non-overtaking rule holds (two
//! messages from one sender on one communicator that both match a receive are received in
//! the order they were sent).
//!
//! No I/O, no knowledge of transports or requests: posted entries carry an opaque `P` (the
//! runtime's request id), unexpected entries an opaque `U` (the buffered payload or a
//! rendezvous descriptor).

use std::collections::VecDeque;
use weft_core::{Tag, ANY_SOURCE, ANY_TAG};

/// Where a message came from and how it is labelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Envelope {
    /// Context id of the communicator.
    pub ctx: u32,
    /// Sender's rank in the communicator.
    pub src: u32,
    /// Message tag (never negative).
    pub tag: Tag,
}

/// What a receive or probe accepts: a context and a source and tag, each possibly a wildcard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pattern {
    /// Context id of the communicator.
    pub ctx: u32,
    /// Source rank, or [`ANY_SOURCE`].
    pub src: i32,
    /// Tag, or [`ANY_TAG`].
    pub tag: Tag,
}

impl Pattern {
    /// True when a message with envelope `e` satisfies this pattern.
    #[inline]
    pub(crate) fn matches(&self, e: &Envelope) -> bool {
        self.ctx == e.ctx
            && (self.src == ANY_SOURCE || self.src as u32 == e.src)
            && (self.tag == ANY_TAG || self.tag == e.tag)
    }
}

/// The posted-receive and unexpected-message queues.
#[derive(Debug)]
pub(crate) struct Matching<P, U> {
    posted: VecDeque<(Pattern, P)>,
    unexpected: VecDeque<(Envelope, U)>,
}

impl<P, U> Default for Matching<P, U> {
    fn default() -> Self {
        Matching {
            posted: VecDeque::new(),
            unexpected: VecDeque::new(),
        }
    }
}

impl<P, U> Matching<P, U> {
    /// A message arrived: removes and returns the oldest posted receive it matches. When this
    /// returns `None` the caller must [`Matching::push_unexpected`] the message.
    #[inline]
    pub(crate) fn take_posted(&mut self, e: &Envelope) -> Option<P> {
        let i = self.posted.iter().position(|(p, _)| p.matches(e))?;
        take_at(&mut self.posted, i).map(|(_, id)| id)
    }

    /// Records a message nobody has asked for yet.
    pub(crate) fn push_unexpected(&mut self, e: Envelope, payload: U) {
        self.unexpected.push_back((e, payload));
    }

    /// A receive is being posted: removes and returns the oldest unexpected message it
    /// matches. When this returns `None` the caller must [`Matching::post`] the receive.
    #[inline]
    pub(crate) fn take_unexpected(&mut self, pattern: &Pattern) -> Option<(Envelope, U)> {
        let i = self
            .unexpected
            .iter()
            .position(|(e, _)| pattern.matches(e))?;
        take_at(&mut self.unexpected, i)
    }

    /// The oldest unexpected message `pattern` matches, taken out when `take` accepts it:
    /// [`Oldest::Taken`]; [`Oldest::Kept`] when `take` refused it (it stays, still the
    /// oldest); [`Oldest::None`] when no message matches.
    #[inline]
    pub(crate) fn take_unexpected_if(
        &mut self,
        pattern: &Pattern,
        take: impl FnOnce(&U) -> bool,
    ) -> Oldest<U> {
        let Some(i) = self.unexpected.iter().position(|(e, _)| pattern.matches(e)) else {
            return Oldest::None;
        };
        if !take(&self.unexpected[i].1) {
            return Oldest::Kept;
        }
        match take_at(&mut self.unexpected, i) {
            Some((e, u)) => Oldest::Taken(e, u),
            None => Oldest::None,
        }
    }

    /// Queues a receive behind all earlier posted receives.
    pub(crate) fn post(&mut self, pattern: Pattern, id: P) {
        self.posted.push_back((pattern, id));
    }

    /// The oldest unexpected message matching `pattern`, left in place (probe).
    pub(crate) fn peek_unexpected(&self, pattern: &Pattern) -> Option<(&Envelope, &U)> {
        self.unexpected
            .iter()
            .find(|(e, _)| pattern.matches(e))
            .map(|(e, u)| (e, u))
    }

    /// Removes the posted receive whose id satisfies `is_it` (cancel); true if one was found.
    pub(crate) fn cancel_posted(&mut self, mut is_it: impl FnMut(&P) -> bool) -> bool {
        match self.posted.iter().position(|(_, id)| is_it(id)) {
            Some(i) => {
                self.posted.remove(i);
                true
            }
            None => false,
        }
    }

    /// Posted receives waiting for a message.
    pub(crate) fn posted_len(&self) -> usize {
        self.posted.len()
    }

    /// Messages waiting for a receive.
    pub(crate) fn unexpected_len(&self) -> usize {
        self.unexpected.len()
    }
}

/// What [`Matching::take_unexpected_if`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Oldest<U> {
    /// No unexpected message matches.
    None,
    /// The oldest matching message, taken out.
    Taken(Envelope, U),
    /// The oldest matching message was refused and stays queued.
    Kept,
}

/// Entry `i` of `q`, taken out. Usually the oldest, which `pop_front` takes without the
/// general removal's shifting.
#[inline]
fn take_at<T>(q: &mut VecDeque<T>, i: usize) -> Option<T> {
    if i == 0 {
        q.pop_front()
    } else {
        q.remove(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn env(ctx: u32, src: u32, tag: Tag) -> Envelope {
        Envelope { ctx, src, tag }
    }
    fn pat(ctx: u32, src: i32, tag: Tag) -> Pattern {
        Pattern { ctx, src, tag }
    }

    #[test]
    fn wildcards() {
        assert!(pat(0, ANY_SOURCE, ANY_TAG).matches(&env(0, 3, 7)));
        assert!(pat(0, 3, ANY_TAG).matches(&env(0, 3, 7)));
        assert!(!pat(0, 2, ANY_TAG).matches(&env(0, 3, 7)));
        assert!(pat(0, ANY_SOURCE, 7).matches(&env(0, 3, 7)));
        assert!(!pat(0, ANY_SOURCE, 8).matches(&env(0, 3, 7)));
        assert!(
            !pat(1, ANY_SOURCE, ANY_TAG).matches(&env(0, 3, 7)),
            "contexts never mix"
        );
    }

    #[test]
    fn posted_first_then_arrival() {
        let mut m: Matching<u32, &str> = Matching::default();
        m.post(pat(0, 1, 5), 10);
        m.post(pat(0, ANY_SOURCE, 5), 11);
        assert_eq!(m.take_posted(&env(0, 2, 5)), Some(11));
        assert_eq!(m.take_posted(&env(0, 1, 5)), Some(10));
        assert_eq!(m.take_posted(&env(0, 1, 5)), None);
    }

    #[test]
    fn take_unexpected_if_takes_only_the_oldest_match_it_accepts() {
        let mut m: Matching<u32, u32> = Matching::default();
        assert_eq!(m.take_unexpected_if(&pat(0, 1, 5), |_| true), Oldest::None);
        m.push_unexpected(env(0, 2, 5), 20);
        m.push_unexpected(env(0, 1, 5), 10);
        m.push_unexpected(env(0, 1, 5), 11);
        // The oldest match is refused: it stays, and the younger one is not offered.
        assert_eq!(
            m.take_unexpected_if(&pat(0, 1, 5), |&u| u == 11),
            Oldest::Kept
        );
        assert_eq!(m.unexpected_len(), 3);
        assert_eq!(
            m.take_unexpected_if(&pat(0, 1, 5), |_| true),
            Oldest::Taken(env(0, 1, 5), 10)
        );
        assert_eq!(
            m.take_unexpected_if(&pat(0, 1, 5), |_| true),
            Oldest::Taken(env(0, 1, 5), 11)
        );
        assert_eq!(m.take_unexpected_if(&pat(0, 1, 5), |_| true), Oldest::None);
        assert_eq!(m.unexpected_len(), 1, "the other source's message stays");
    }

    #[test]
    fn unexpected_in_arrival_order() {
        let mut m: Matching<u32, &str> = Matching::default();
        m.push_unexpected(env(0, 1, 5), "first");
        m.push_unexpected(env(0, 1, 6), "second");
        m.push_unexpected(env(0, 1, 5), "third");
        assert_eq!(
            m.peek_unexpected(&pat(0, 1, ANY_TAG)).map(|(_, u)| *u),
            Some("first")
        );
        assert_eq!(
            m.take_unexpected(&pat(0, 1, 5)).map(|(_, u)| u),
            Some("first")
        );
        assert_eq!(
            m.take_unexpected(&pat(0, 1, 5)).map(|(_, u)| u),
            Some("third")
        );
        assert_eq!(
            m.take_unexpected(&pat(0, ANY_SOURCE, ANY_TAG))
                .map(|(_, u)| u),
            Some("second")
        );
        assert_eq!(m.unexpected_len(), 0);
    }

    #[test]
    fn cancel() {
        let mut m: Matching<u32, ()> = Matching::default();
        m.post(pat(0, 1, 5), 1);
        m.post(pat(0, 1, 5), 2);
        assert!(m.cancel_posted(|&id| id == 1));
        assert!(!m.cancel_posted(|&id| id == 1));
        assert_eq!(m.take_posted(&env(0, 1, 5)), Some(2));
    }

    proptest! {
        /// Whatever the interleaving of arrivals and receives, messages from one source with
        /// one tag are received in the order sent, and every message is received once.
        #[test]
        fn non_overtaking(ops in proptest::collection::vec((0u8..2, 0u32..3, 0i32..2, any::<bool>(), any::<bool>()), 1..200)) {
            let mut m: Matching<(u32, i32, i32, u64), (Envelope, u64)> = Matching::default();
            let mut seq = [[0u64; 2]; 3];
            let mut delivered: Vec<(Envelope, u64, u64)> = Vec::new();
            let mut rid = 0u64;
            for (op, src, tag, any_src, any_tag) in ops {
                if op == 0 {
                    let e = env(0, src, tag);
                    let n = seq[src as usize][tag as usize];
                    seq[src as usize][tag as usize] += 1;
                    match m.take_posted(&e) {
                        Some(r) => delivered.push((e, n, r.3)),
                        None => m.push_unexpected(e, (e, n)),
                    }
                } else {
                    let p = pat(0, if any_src { ANY_SOURCE } else { src as i32 }, if any_tag { ANY_TAG } else { tag });
                    rid += 1;
                    match m.take_unexpected(&p) {
                        Some((e, (_, n))) => { prop_assert!(p.matches(&e)); delivered.push((e, n, rid)); }
                        None => m.post(p, (src, tag, 0, rid)),
                    }
                }
            }
            for s in 0..3u32 { for t in 0..2 {
                let got: Vec<u64> = delivered.iter().filter(|(e, _, _)| e.src == s && e.tag == t).map(|(_, n, _)| *n).collect();
                let mut sorted = got.clone(); sorted.sort();
                prop_assert_eq!(&got, &sorted);
                sorted.dedup();
                prop_assert_eq!(got.len(), sorted.len());
            }}
        }
    }
}
