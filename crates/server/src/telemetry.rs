//! OTLP export of the runs' OpenTelemetry GenAI spans and metrics (`[telemetry]`): the SDK's
//! tracer and meter providers with the `opentelemetry-otlp` HTTP exporters, built when the
//! settings ask for them, handed to every run as the runtime's [`Telemetry`] and shut down (so
//! flushed) with the server. The spans and metrics themselves are the runtime's
//! (`agentwire_runtime::Telemetry`).
//!
//! Without `[telemetry]` nothing here exists: no provider, no exporter thread, and runs are
//! given no `Telemetry`, so they make no span.

use opentelemetry_otlp::{MetricExporter, Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;

use agentwire_runtime::Telemetry;

use crate::settings::{OtlpProtocol, TelemetrySettings};

/// The providers a server exports through, and the runtime's handle on them.
pub(crate) struct Exporting {
    pub(crate) telemetry: Telemetry,
    tracers: SdkTracerProvider,
    meters: SdkMeterProvider,
}

impl std::fmt::Debug for Exporting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exporting").finish_non_exhaustive()
    }
}

impl Exporting {
    /// Builds the OTLP exporters and the providers (a batch span processor and a periodic
    /// metric reader, each on a thread of its own).
    ///
    /// # Errors
    /// The exporter's message when an endpoint or the HTTP client cannot be set up.
    pub(crate) fn start(settings: &TelemetrySettings) -> Result<Self, String> {
        let protocol = match settings.protocol {
            OtlpProtocol::HttpProtobuf => Protocol::HttpBinary,
            OtlpProtocol::HttpJson => Protocol::HttpJson,
        };
        let spans = SpanExporter::builder()
            .with_http()
            .with_protocol(protocol)
            .with_endpoint(format!("{}/v1/traces", settings.endpoint))
            .build()
            .map_err(|error| error.to_string())?;
        let metrics = MetricExporter::builder()
            .with_http()
            .with_protocol(protocol)
            .with_endpoint(format!("{}/v1/metrics", settings.endpoint))
            .build()
            .map_err(|error| error.to_string())?;
        let resource = Resource::builder()
            .with_service_name(settings.service_name.clone())
            .build();
        let tracers = SdkTracerProvider::builder()
            .with_batch_exporter(spans)
            .with_resource(resource.clone())
            .build();
        let meters = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(metrics).build())
            .with_resource(resource)
            .build();
        let telemetry = Telemetry::new(&tracers, &meters).capture_content(settings.capture_content);
        Ok(Self {
            telemetry,
            tracers,
            meters,
        })
    }

    /// Exports what is pending and stops the exporters. Blocking (the SDK waits for its
    /// threads), so it runs on a blocking thread.
    pub(crate) async fn shutdown(&self) {
        let (tracers, meters) = (self.tracers.clone(), self.meters.clone());
        let stopped = tokio::task::spawn_blocking(move || {
            if let Err(error) = tracers.shutdown() {
                tracing::warn!("stopping the OTLP span exporter: {error}");
            }
            if let Err(error) = meters.shutdown() {
                tracing::warn!("stopping the OTLP metric exporter: {error}");
            }
        });
        let _ = stopped.await;
    }
}
