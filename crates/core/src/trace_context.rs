//! [`TraceContext`]: the W3C trace context headers an outbound call carries, so that a model
//! provider, an MCP server or another agent continues the caller's trace. Plain data: the
//! runtime fills it with an OpenTelemetry propagator, the brain and tools copy it onto their
//! requests without reading it.

/// The headers (`traceparent`, and `tracestate` when the trace has one) that place an
/// outbound call in a trace, as a propagator wrote them. Empty means "no trace": nothing is
/// sent.
///
/// ```
/// use agentwire_core::TraceContext;
///
/// let mut context = TraceContext::default();
/// context.set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
/// assert_eq!(
///     context.get("traceparent"),
///     Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
/// );
/// assert_eq!(context.iter().count(), 1);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceContext {
    /// Lowercase header names and their values, in the order they were set; a name at most
    /// once.
    headers: Vec<(String, String)>,
}

impl TraceContext {
    /// Sets the header `name` (lowercased) to `value`, replacing an earlier value.
    pub fn set(&mut self, name: &str, value: impl Into<String>) {
        let name = name.to_ascii_lowercase();
        let value = value.into();
        match self.headers.iter_mut().find(|(known, _)| *known == name) {
            Some(header) => header.1 = value,
            None => self.headers.push((name, value)),
        }
    }

    /// The value of the header `name` (any case), if set.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(known, _)| known.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The headers as (name, value) pairs.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
    }

    /// The header names set.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.headers.iter().map(|(name, _)| name.as_str())
    }

    /// Whether no header is set.
    pub fn is_empty(&self) -> bool {
        self.headers.is_empty()
    }
}
