//! A webhook receiver on loopback that records every request and answers with a settable status.

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use salvo::prelude::*;

#[derive(Debug, Clone)]
pub struct Hit {
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Hit {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).expect("a JSON body")
    }
}

#[derive(Clone)]
pub struct Receiver {
    pub url: String,
    hits: Arc<Mutex<Vec<Hit>>>,
    status: Arc<AtomicU16>,
}

struct Record {
    hits: Arc<Mutex<Vec<Hit>>>,
    status: Arc<AtomicU16>,
}

#[async_trait]
impl Handler for Record {
    async fn handle(&self, req: &mut Request, _depot: &mut Depot, res: &mut Response, _ctrl: &mut FlowCtrl) {
        let headers = req
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or_default().to_string()))
            .collect();
        let body = req.payload().await.map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
        self.hits.lock().unwrap().push(Hit { headers, body });
        let status = self.status.load(Ordering::SeqCst);
        res.status_code(StatusCode::from_u16(status).unwrap());
        res.render(format!("status {status}"));
    }
}

impl Receiver {
    pub async fn start() -> Receiver {
        let hits = Arc::new(Mutex::new(Vec::new()));
        let status = Arc::new(AtomicU16::new(200));
        let router = Router::with_path("{**rest}").goal(Record { hits: hits.clone(), status: status.clone() });
        let (acceptor, addr) = opsdeck::bind("127.0.0.1", 0).await.unwrap();
        tokio::spawn(Server::new(acceptor).serve(router));
        Receiver { url: format!("http://{addr}/hook"), hits, status }
    }

    pub fn respond_with(&self, status: u16) {
        self.status.store(status, Ordering::SeqCst);
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.hits.lock().unwrap().clone()
    }

    /// Waits until at least `n` requests arrived (at most 5 s).
    pub async fn wait_for(&self, n: usize) -> Vec<Hit> {
        for _ in 0..100 {
            let hits = self.hits();
            if hits.len() >= n {
                return hits;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("expected {n} webhook requests, got {}", self.hits().len());
    }
}
