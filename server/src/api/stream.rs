//! JSON arrays streamed from a database cursor: the response's head goes
//! at once, each item as the cursor delivers it, the tail after the last.
//!
//! ```text
//!  head ("[", or a zone's fields then `"rrsets":[`)
//!    ─► per cursor item: its JSON values, comma-separated (as many items
//!       as are ready go in one chunk)
//!    ─► tail ("]" or "]}")
//!  a database fault part way: logged with an id, the connection closed
//!  without the tail (the 200 is sent already; a cut body never parses)
//! ```
//!
//! Memory holds what one cursor batch yields, whatever the listing's size.

use super::json::error_id;
use crate::backend::StoreError;
use axum::body::{Body, Bytes};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::stream::{self, BoxStream, StreamExt};

/// Items of a streamed array: per cursor item, its JSON values.
pub type JsonItems = BoxStream<'static, Result<Vec<String>, StoreError>>;

/// Items that may be ready together, sent as one chunk.
const CHUNK_ITEMS: usize = 64;

/// A `status` response whose body is `head`, the values of `items`
/// separated by commas, then `tail`.
pub fn json_array(
    status: StatusCode,
    head: String,
    items: JsonItems,
    tail: &'static str,
) -> Response {
    let mut first = true;
    let body = items.ready_chunks(CHUNK_ITEMS).map(move |ready| {
        let mut chunk = String::new();
        for item in ready {
            let values = item.map_err(cut)?;
            for value in values {
                if !first {
                    chunk.push(',');
                }
                first = false;
                chunk.push_str(&value);
            }
        }
        Ok::<_, std::io::Error>(Bytes::from(chunk))
    });
    let head = stream::once(async move { Ok(Bytes::from(head)) });
    let tail = stream::once(async move { Ok(Bytes::from_static(tail.as_bytes())) });
    let all = head.chain(body).chain(tail);
    let json = [(header::CONTENT_TYPE, "application/json")];
    (status, json, Body::from_stream(all)).into_response()
}

/// A fault part way through a streamed body: logged with an id; the
/// error closes the connection.
fn cut(error: StoreError) -> std::io::Error {
    let id = error_id();
    tracing::warn!(%id, %error, "HTTP API response cut: the database failed part way");
    std::io::Error::other(format!("database read failed (error id {id})"))
}

/// One value as JSON text (the shapes here always serialize).
pub fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}
