//! An in-process agentwire server on port 0 running scripted agents from a TOML configuration,
//! and a TCP proxy that cuts connections, for the client's tests.
#![allow(clippy::unwrap_used, dead_code, unreachable_pub)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentwire_runtime::config::AgentsFile;
use agentwire_server::{Server, Settings};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// The words `talker` streams, one delta each.
pub const WORDS: usize = 60;

pub fn word(index: usize) -> String {
    format!("w{index} ")
}

const CONFIG: &str = r#"
[[agents]]
name = "talker"
description = "Streams sixty words"
provider = "scripted"
script = "talker.json"
tokens_per_second = 300

[[agents]]
name = "writer"
description = "Writes a file after approval"
provider = "scripted"
script = "writer.json"
tools = ["write_file"]
approval = ["write_file"]
workspace = "ws"

[[agents]]
name = "asker"
description = "Calls the client's lookup tool"
provider = "scripted"
script = "asker.json"
schema = "function_calling"
"#;

/// A running server, stopped when dropped.
pub struct TestServer {
    pub url: String,
    pub dir: tempfile::TempDir,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

fn scripts() -> Vec<(&'static str, Value)> {
    let mut talk: Vec<Value> = (0..WORDS)
        .map(|index| json!({"type": "text_delta", "text": word(index)}))
        .collect();
    talk.push(json!({"type": "finish", "reason": "stop"}));
    let file = json!({"path": "a.txt", "content": "approved"}).to_string();
    let writer = json!({"turns": [
        [{"type": "text_delta", "text": "Let me write it."},
         {"type": "tool_call_start", "id": "c1", "name": "write_file"},
         {"type": "tool_call_delta", "id": "c1", "args": file},
         {"type": "tool_call_end", "id": "c1"},
         {"type": "finish", "reason": "tool_calls"}],
        [{"type": "text_delta", "text": "Done."}, {"type": "finish", "reason": "stop"}]
    ]});
    let asker = json!({"turns": [
        [{"type": "tool_call_start", "id": "c1", "name": "lookup"},
         {"type": "tool_call_delta", "id": "c1", "args": "{\"city\": \"Oslo\"}"},
         {"type": "tool_call_end", "id": "c1"},
         {"type": "finish", "reason": "tool_calls"}],
        [{"type": "text_delta", "text": "It is cold."}, {"type": "finish", "reason": "stop"}]
    ]});
    vec![
        ("talker.json", json!({"turns": vec![Value::Array(talk); 8]})),
        ("writer.json", writer),
        ("asker.json", asker),
    ]
}

impl TestServer {
    pub async fn start() -> Self {
        Self::with_settings(Settings::default()).await
    }

    pub async fn with_settings(settings: Settings) -> Self {
        let dir = tempfile::tempdir().unwrap();
        for (name, script) in scripts() {
            std::fs::write(dir.path().join(name), script.to_string()).unwrap();
        }
        std::fs::create_dir(dir.path().join("ws")).unwrap();
        let file = AgentsFile::from_toml(CONFIG).unwrap();
        let mut agents = Vec::new();
        for config in &file.agents {
            agents.push(config.build(dir.path(), |_| None).await.unwrap());
        }
        let settings = Settings {
            addr: "127.0.0.1:0".parse().unwrap(),
            ..settings
        };
        let server = Server::open(agents, settings).await.unwrap();
        let listener = server.bind().await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(server.serve(listener, async move {
            let _ = stopped.await;
        }));
        Self {
            url,
            dir,
            stop: Some(stop),
        }
    }
}

/// A TCP proxy in front of `target` that cuts its first `cut.len()` connections abruptly,
/// connection i after `cut[i]` bytes from the server; later connections pass whole.
pub struct CuttingProxy {
    pub url: String,
    pub connections: Arc<AtomicUsize>,
}

impl CuttingProxy {
    pub async fn start(target: &str, cut: Vec<usize>) -> Self {
        let target = target.trim_start_matches("http://").to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let connections = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&connections);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let number = counter.fetch_add(1, Ordering::SeqCst);
                let limit = cut.get(number).copied();
                let server = TcpStream::connect(&target).await.unwrap();
                tokio::spawn(pipe(client, server, limit));
            }
        });
        Self { url, connections }
    }
}

/// Copies both ways; after `limit` bytes from the server both sockets are dropped.
async fn pipe(client: TcpStream, server: TcpStream, limit: Option<usize>) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let upstream = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
    });
    let mut sent = 0;
    let mut buffer = vec![0u8; 4096];
    while let Ok(n) = server_read.read(&mut buffer).await {
        if n == 0 {
            break;
        }
        let take = match limit {
            Some(limit) => n.min(limit - sent),
            None => n,
        };
        if client_write.write_all(&buffer[..take]).await.is_err() {
            break;
        }
        sent += take;
        if limit == Some(sent) {
            break;
        }
    }
    upstream.abort();
}
