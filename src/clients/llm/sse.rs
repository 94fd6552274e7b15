//! The one `text/event-stream` decoder of the model clients (OpenAI-compatible and
//! Anthropic streams): fed raw body chunks as they arrive, in any split — also inside a
//! multi-byte character — it yields each completed event.

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name (empty when absent).
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Incremental SSE decoder: feed it chunks as they arrive, in any split.
#[derive(Debug, Default)]
pub struct SseDecoder {
    buf: Vec<u8>,
    event: String,
    data: Vec<String>,
}

impl SseDecoder {
    /// Decodes `chunk` (text), returning the events it completed.
    pub fn feed(&mut self, chunk: &str) -> Vec<SseEvent> {
        self.feed_bytes(chunk.as_bytes())
    }

    /// Decodes raw body bytes, returning the events they completed. Lines are split on
    /// `\n` bytes, so a character cut between two chunks is joined before it is decoded.
    pub fn feed_bytes(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        while let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
            let raw: Vec<u8> = self.buf.drain(..=i).collect();
            let line = String::from_utf8_lossy(&raw);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if !self.data.is_empty() || !self.event.is_empty() {
                    out.push(SseEvent { event: std::mem::take(&mut self.event), data: self.data.join("\n") });
                    self.data.clear();
                }
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => self.event = value.to_string(),
                "data" => self.data.push(value.to_string()),
                _ => {}
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_split_between_chunks_survives() {
        let body = "data: {\"t\":\"héllo ✓\"}\n\n".as_bytes();
        let mut dec = SseDecoder::default();
        let mut events = Vec::new();
        for b in body {
            events.extend(dec.feed_bytes(std::slice::from_ref(b)));
        }
        assert_eq!(events, vec![SseEvent { event: String::new(), data: "{\"t\":\"héllo ✓\"}".into() }]);
    }

    #[test]
    fn comments_are_skipped_and_data_lines_joined() {
        let mut dec = SseDecoder::default();
        let ev = dec.feed(": keep-alive\r\nevent: x\r\ndata: a\r\ndata: b\r\n\r\n");
        assert_eq!(ev, vec![SseEvent { event: "x".into(), data: "a\nb".into() }]);
    }
}
