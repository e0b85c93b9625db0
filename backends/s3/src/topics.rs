//! Per-topic S3 settings (`s3.topic.<topic>.sse.kms.key.id`, `s3.topic.<topic>.storage.class`): which topic a
//! key belongs to is read from the key itself (`{prefix}{topic}-{topicId}/{partition}/...`, by
//! [`rsm_core::partition_dir::topic_of_key`], the one parser of that shape), and [`TopicRouter`], the
//! store's object_store, sends each upload of a topic with settings of its own to the client of that
//! topic's KMS key (an object_store client carries one SSE setting) with that topic's storage class.
//! Reads, listings and deletes go to the default client: S3 needs no KMS key to read an SSE-KMS object.

use crate::config::{TOPIC_SSE_KMS_KEY_ID, TOPIC_STORAGE_CLASS, topic_setting};
use async_trait::async_trait;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    Attribute, CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
use rsm_core::config::ConfigReader;
use rsm_core::partition_dir::topic_of_key;
use rsm_core::{Error, Result};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// One topic's own settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TopicSettings {
    /// `s3.topic.<topic>.sse.kms.key.id`.
    pub kms_key_id: Option<String>,
    /// `s3.topic.<topic>.storage.class`.
    pub storage_class: Option<String>,
}

/// Reads the `s3.topic.<topic>.*` family: every key under `s3.topic.` must end with one of the family's
/// endings after a topic name, else it is a config error naming the key.
pub fn read_topics(r: &mut ConfigReader<'_>) -> Result<BTreeMap<String, TopicSettings>> {
    let mut topics: BTreeMap<String, TopicSettings> = BTreeMap::new();
    for (rest, value) in r.with_prefix("s3.topic.") {
        let key = format!("s3.topic.{rest}");
        let value = Some(value.trim().to_string()).filter(|v| !v.is_empty());
        let kms = rest.strip_suffix(".sse.kms.key.id").filter(|t| !t.is_empty());
        let class = rest.strip_suffix(".storage.class").filter(|t| !t.is_empty());
        match (kms, class) {
            (Some(topic), _) => topics.entry(topic.to_string()).or_default().kms_key_id = value,
            (_, Some(topic)) => topics.entry(topic.to_string()).or_default().storage_class = value,
            _ => {
                return Err(Error::config(
                    &key,
                    format!(
                        "unknown setting (a topic's S3 settings are `{}` and `{}`)",
                        TOPIC_SSE_KMS_KEY_ID.key, TOPIC_STORAGE_CLASS.key
                    ),
                ));
            }
        }
    }
    topics.retain(|_, t| *t != TopicSettings::default());
    for topic in topics.keys() {
        if topic.contains('/') {
            return Err(Error::config(topic_setting(&TOPIC_STORAGE_CLASS, topic), "a topic name has no `/`"));
        }
    }
    Ok(topics)
}

/// Where one upload goes: the index of its client (0: the default) and the storage class it is sent with
/// (`None`: the store's own, `s3.storage.class`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// Index into the router's clients.
    pub client: usize,
    /// The topic's storage class.
    pub storage_class: Option<String>,
}

/// The store's object_store: the default client, and one client per distinct topic KMS key, uploads sent by
/// their key's topic. `Debug` and `Display` show the default client's bucket, never credentials.
pub struct TopicRouter<S = object_store::aws::AmazonS3> {
    clients: Vec<Arc<S>>,
    routes: BTreeMap<String, Route>,
}

impl<S> TopicRouter<S> {
    /// The router over `default` and `topics`; `client_for(kms_key_id)` builds the client of one topic KMS
    /// key (called once per distinct key).
    pub fn new<E>(
        default: Arc<S>,
        topics: &BTreeMap<String, TopicSettings>,
        mut client_for: impl FnMut(&str) -> std::result::Result<S, E>,
    ) -> std::result::Result<Self, E> {
        let mut clients = vec![default];
        let mut by_key: BTreeMap<&str, usize> = BTreeMap::new();
        let mut routes = BTreeMap::new();
        for (topic, t) in topics {
            let client = match t.kms_key_id.as_deref() {
                None => 0,
                Some(k) => match by_key.get(k) {
                    Some(&i) => i,
                    None => {
                        clients.push(Arc::new(client_for(k)?));
                        by_key.insert(k, clients.len() - 1);
                        clients.len() - 1
                    }
                },
            };
            routes.insert(topic.clone(), Route { client, storage_class: t.storage_class.clone() });
        }
        Ok(TopicRouter { clients, routes })
    }

    /// How many clients: the default and one per distinct topic KMS key.
    pub fn clients(&self) -> usize {
        self.clients.len()
    }

    /// Where an upload to `key` goes.
    pub fn route(&self, key: &str) -> Route {
        topic_of_key(key).and_then(|t| self.routes.get(t)).cloned().unwrap_or(Route { client: 0, storage_class: None })
    }

    fn default(&self) -> &S {
        &self.clients[0]
    }
}

impl<S: fmt::Display> fmt::Debug for TopicRouter<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TopicRouter({}, {} clients, {} topics)", self.clients[0], self.clients.len(), self.routes.len())
    }
}

impl<S: fmt::Display> fmt::Display for TopicRouter<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.clients[0].fmt(f)
    }
}

impl<S> TopicRouter<S> {
    /// The client of `location` and `attributes` with the topic's storage class in place of the store's.
    fn upload_target(&self, location: &Path, attributes: &mut object_store::Attributes) -> &S {
        let route = self.route(location.as_ref());
        if let Some(class) = route.storage_class {
            attributes.insert(Attribute::StorageClass, class.into());
        }
        &self.clients[route.client]
    }
}

#[async_trait]
impl<S: ObjectStore + fmt::Display> ObjectStore for TopicRouter<S> {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        mut opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let client = self.upload_target(location, &mut opts.attributes);
        client.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        mut opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        let client = self.upload_target(location, &mut opts.attributes);
        client.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> object_store::Result<GetResult> {
        self.default().get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.default().delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.default().list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.default().list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.default().list_with_delimiter(prefix).await
    }

    /// A copy is written under the KMS key of its destination's topic (the store copies nothing today;
    /// object_store's copy takes no storage class).
    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> object_store::Result<()> {
        self.clients[self.route(to.as_ref()).client].copy_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsm_core::config::props;

    const ID: &str = "AAAAAAAAAAAAAAAAAAAA-w";

    fn topics(pairs: &[(&str, &str)]) -> Result<BTreeMap<String, TopicSettings>> {
        let p = props(pairs.iter().copied());
        let mut r = ConfigReader::new(&p);
        let t = read_topics(&mut r)?;
        r.finish()?;
        Ok(t)
    }

    /// Each key's client and storage class, as a table: topics with a KMS key get its client (one per
    /// distinct key), topics with only a storage class the default client, every other key the defaults.
    #[test]
    fn uploads_go_by_their_keys_topic() {
        let t = topics(&[
            ("s3.topic.orders.sse.kms.key.id", "k1"),
            ("s3.topic.orders.storage.class", "STANDARD_IA"),
            ("s3.topic.pay.v2.sse.kms.key.id", "k2"),
            ("s3.topic.audit.sse.kms.key.id", "k1"),
            ("s3.topic.logs.storage.class", "GLACIER_IR"),
        ])
        .unwrap();
        let mut built = Vec::new();
        let router = TopicRouter::new(Arc::new("default".to_string()), &t, |k| {
            built.push(k.to_string());
            Ok::<_, ()>(format!("client of {k}"))
        })
        .unwrap();
        assert_eq!(built, ["k1", "k2"], "one client per distinct key");
        assert_eq!(router.clients(), 3);
        let (k1, k2) =
            (router.route(&format!("orders-{ID}/0/x")).client, router.route(&format!("pay.v2-{ID}/0/x")).client);
        let class = |c: &str| Some(c.to_string());
        let cases: Vec<(String, usize, Option<String>)> = vec![
            (format!("orders-{ID}/0/00000000000000000000-{ID}.log"), k1, class("STANDARD_IA")),
            (format!("tiered/orders-{ID}/3/00000000000000000042-{ID}.manifest"), k1, class("STANDARD_IA")),
            (format!("orders-{ID}/0/00000000000000000000-{ID}.log.tmp-1"), k1, class("STANDARD_IA")),
            (format!("audit-{ID}/1/00000000000000000000-{ID}.indexes"), k1, None),
            (format!("pay.v2-{ID}/0/00000000000000000000-{ID}.segment"), k2, None),
            (format!("logs-{ID}/0/00000000000000000000-{ID}.log"), 0, class("GLACIER_IR")),
            (format!("other-{ID}/0/00000000000000000000-{ID}.log"), 0, None),
            // A topic whose name only starts like a configured one.
            (format!("orders2-{ID}/0/00000000000000000000-{ID}.log"), 0, None),
            ("store-files/rsm.lock".to_string(), 0, None),
        ];
        assert_ne!(k1, k2);
        for (key, client, storage_class) in cases {
            assert_eq!(router.route(&key), Route { client, storage_class }, "{key}");
        }
    }

    #[test]
    fn the_family_is_read_and_typos_fail() {
        assert!(topics(&[]).unwrap().is_empty());
        let t = topics(&[("s3.topic.a.b.storage.class", "ONEZONE_IA")]).unwrap();
        assert_eq!(t["a.b"].storage_class.as_deref(), Some("ONEZONE_IA"));
        for typo in ["s3.topic.orders.storage.klass", "s3.topic..storage.class", "s3.topic.orders.sse.kms.key"] {
            let e = topics(&[(typo, "x")]).unwrap_err();
            assert!(e.to_string().contains(&format!("`{typo}`")), "{e}");
        }
    }
}
