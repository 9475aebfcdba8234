//! Resumable `/mcp` streams (issue #18). Without an event store rmcp numbers each stream's events
//! from 0, so the priming event and the first message of a stream share an id and a reconnect
//! replays from the wrong place; a result that completed while the client was away was lost.
//! [`SessionEvents`] is rmcp's [`EventStore`]: every event gets an id unique in this process
//! (`<boot>.<stream>.<event>`, with a random boot prefix so ids from before a restart are
//! unknown rather than wrong), each stream keeps its recent events, and a reconnect with
//! `Last-Event-ID` gets exactly the events after it and then, while the request is still running,
//! the ones that follow until its response.
//!
//! Memory is bounded: at most [`MAX_EVENTS_PER_STREAM`] events per stream and [`MAX_STREAMS`]
//! streams (oldest dropped first); a stream whose response was sent is forgotten after
//! [`FINISHED_RETENTION`].

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::ServerJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::{
    EventStore, EventStoreError, EventStream, ServerSseMessage,
};
use tokio::sync::{mpsc, watch};

pub(super) const MAX_EVENTS_PER_STREAM: usize = 256;
pub(super) const MAX_STREAMS: usize = 4_096;
/// How long a client has to reconnect and fetch a response it missed.
pub(super) const FINISHED_RETENTION: Duration = Duration::from_secs(300);
const EXPIRY_SCAN_EVERY: Duration = Duration::from_secs(1);

/// The in-memory event log of every `/mcp` stream of this process.
pub(super) struct SessionEvents {
    boot: String,
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    next_stream: u64,
    /// rmcp's stream id → our stream number.
    by_name: HashMap<String, u64>,
    streams: HashMap<u64, StreamLog>,
    /// Stream numbers, oldest first.
    order: VecDeque<u64>,
    last_expiry_scan: Option<Instant>,
}

struct StreamLog {
    name: String,
    /// The standalone GET stream of a session never ends.
    common: bool,
    events: VecDeque<(u64, ServerSseMessage)>,
    next_event: u64,
    finished_at: Option<Instant>,
    /// The number of the last stored event, for replays following the live stream.
    latest: watch::Sender<u64>,
}

impl Default for SessionEvents {
    fn default() -> Self {
        Self::new()
    }
}

impl SessionEvents {
    pub(super) fn new() -> Self {
        Self {
            boot: format!("{:08x}", rand::random::<u32>()),
            state: Arc::new(Mutex::new(State::default())),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn parse(&self, id: &str) -> Option<(u64, u64)> {
        let mut parts = id.split('.');
        if parts.next()? != self.boot {
            return None;
        }
        let stream = parts.next()?.parse().ok()?;
        let event = parts.next()?.parse().ok()?;
        parts.next().is_none().then_some((stream, event))
    }
}

impl State {
    fn stream_for(&mut self, name: &str) -> u64 {
        if let Some(&n) = self.by_name.get(name) {
            return n;
        }
        self.evict(Instant::now());
        let n = self.next_stream;
        self.next_stream += 1;
        self.by_name.insert(name.to_owned(), n);
        self.streams.insert(
            n,
            StreamLog {
                name: name.to_owned(),
                common: name.ends_with(":common"),
                events: VecDeque::new(),
                next_event: 0,
                finished_at: None,
                latest: watch::channel(0).0,
            },
        );
        self.order.push_back(n);
        n
    }

    /// Drops streams finished long enough ago (looked for at most once a second: a request
    /// opens a stream, so this is on every request's path), and the oldest when over the cap.
    fn evict(&mut self, now: Instant) {
        if self
            .last_expiry_scan
            .is_none_or(|at| now.duration_since(at) >= EXPIRY_SCAN_EVERY)
        {
            self.last_expiry_scan = Some(now);
            self.streams.retain(|_, log| {
                log.finished_at
                    .is_none_or(|at| now.duration_since(at) < FINISHED_RETENTION)
            });
            let streams = &self.streams;
            self.by_name.retain(|_, n| streams.contains_key(n));
            self.order.retain(|n| streams.contains_key(n));
        }
        while self.streams.len() >= MAX_STREAMS {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            if let Some(log) = self.streams.remove(&oldest) {
                self.by_name.remove(&log.name);
            }
        }
    }
}

/// A response or error ends the request's stream.
fn ends_stream(event: &ServerSseMessage) -> bool {
    matches!(
        event.message.as_deref(),
        Some(ServerJsonRpcMessage::Response(_) | ServerJsonRpcMessage::Error(_))
    )
}

#[derive(Debug)]
struct UnknownEvent;

impl std::fmt::Display for UnknownEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("unknown or expired Last-Event-ID")
    }
}

impl std::error::Error for UnknownEvent {}

#[async_trait::async_trait]
impl EventStore for SessionEvents {
    async fn store_event(
        &self,
        stream_id: &str,
        event: &ServerSseMessage,
    ) -> Result<String, EventStoreError> {
        let mut state = self.lock();
        let stream = state.stream_for(stream_id);
        let log = state.streams.get_mut(&stream).expect("stream just ensured");
        let n = log.next_event;
        log.next_event += 1;
        let id = format!("{}.{stream}.{n}", self.boot);
        let mut stored = event.clone();
        stored.event_id = Some(id.clone());
        if !log.common && ends_stream(&stored) {
            log.finished_at = Some(Instant::now());
        }
        if log.events.len() >= MAX_EVENTS_PER_STREAM {
            log.events.pop_front();
        }
        log.events.push_back((n, stored));
        log.latest.send_replace(n);
        Ok(id)
    }

    async fn replay_events_after(
        &self,
        last_event_id: &str,
    ) -> Result<EventStream, EventStoreError> {
        let (stream, mut cursor) = self.parse(last_event_id).ok_or(UnknownEvent)?;
        let mut latest = self
            .lock()
            .streams
            .get(&stream)
            .ok_or(UnknownEvent)?
            .latest
            .subscribe();
        let (tx, rx) = mpsc::channel(64);
        let state = self.state.clone();
        tokio::spawn(async move {
            loop {
                let Some((events, finished)) = after(&state, stream, cursor) else {
                    return;
                };
                for (n, event) in events {
                    cursor = n;
                    if tx.send(event).await.is_err() {
                        return;
                    }
                }
                if finished {
                    return;
                }
                // Still running: follow the stream until its response, or until the client
                // goes away again (or the stream is evicted, which drops the sender).
                tokio::select! {
                    changed = latest.changed() => if changed.is_err() { return },
                    () = tx.closed() => return,
                }
            }
        });
        Ok(Box::pin(Received(rx)))
    }
}

/// Events of `stream` after `event` that carry a message (priming events hold none), and
/// whether the stream is over; `None` once it is forgotten.
#[allow(clippy::type_complexity)]
fn after(
    state: &Mutex<State>,
    stream: u64,
    event: u64,
) -> Option<(Vec<(u64, ServerSseMessage)>, bool)> {
    let state = state.lock().unwrap_or_else(|p| p.into_inner());
    let log = state.streams.get(&stream)?;
    let events = log
        .events
        .iter()
        .filter(|(n, e)| *n > event && e.message.is_some())
        .cloned()
        .collect();
    Some((events, log.finished_at.is_some()))
}

/// An mpsc receiver as a `Stream` (rmcp wants `Send + Sync` streams).
struct Received(mpsc::Receiver<ServerSseMessage>);

impl futures::Stream for Received {
    type Item = ServerSseMessage;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<ServerSseMessage>> {
        self.0.poll_recv(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use rmcp::model::{RequestId, ServerResult};

    fn response(id: i64) -> ServerSseMessage {
        ServerSseMessage::from_message(ServerJsonRpcMessage::response(
            ServerResult::empty(()),
            RequestId::Number(id),
        ))
    }

    #[tokio::test]
    async fn ids_are_unique_and_a_replay_starts_after_the_one_given() {
        let store = SessionEvents::new();
        let priming = ServerSseMessage::retry(Duration::from_secs(3));
        let a = store.store_event("s1", &priming).await.unwrap();
        let other = store.store_event("s2", &priming).await.unwrap();
        let b = store.store_event("s1", &response(1)).await.unwrap();
        assert_ne!(a, b);
        assert_ne!(a, other);
        // After the priming event: the response, then the stream ends (it was the response).
        let replayed: Vec<_> = store.replay_events_after(&a).await.unwrap().collect().await;
        assert_eq!(replayed.len(), 1);
        assert_eq!(replayed[0].event_id.as_deref(), Some(b.as_str()));
        // After the last event of a finished stream: nothing.
        let rest: Vec<_> = store.replay_events_after(&b).await.unwrap().collect().await;
        assert!(rest.is_empty());
        // Ids of another boot, or nonsense, are unknown.
        assert!(store.replay_events_after("00000000.0.0").await.is_err());
        assert!(store.replay_events_after("x").await.is_err());
    }

    #[tokio::test]
    async fn a_replay_follows_a_running_stream_to_its_response() {
        let store = Arc::new(SessionEvents::new());
        let first = store
            .store_event("s", &ServerSseMessage::retry(Duration::from_secs(3)))
            .await
            .unwrap();
        let mut replay = store.replay_events_after(&first).await.unwrap();
        let later = store.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            later.store_event("s", &response(9)).await.unwrap();
        });
        let next = tokio::time::timeout(Duration::from_secs(5), replay.next())
            .await
            .expect("the response arrives")
            .expect("one event");
        assert!(next.message.is_some());
        assert!(
            replay.next().await.is_none(),
            "the stream ends after its response"
        );
    }

    #[test]
    fn streams_are_bounded() {
        let mut state = State::default();
        for i in 0..MAX_STREAMS + 10 {
            state.stream_for(&format!("s{i}"));
        }
        assert!(state.streams.len() <= MAX_STREAMS);
        assert!(!state.by_name.contains_key("s0"), "the oldest went first");
    }
}
