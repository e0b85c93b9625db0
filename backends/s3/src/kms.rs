//! AWS KMS as a key-encryption key (`encryption.key.<id>.kms.key.id`, or the short form
//! `encryption.kms.key.id`; `encryption.kms.*`): [`AwsKms`], the [`KmsConnector`] the core's keyring uses
//! for KMS keys, which the host passes where the settings are read (the facade's store builder does).
//!
//! KMS's JSON protocol over object_store's HTTP client, each request signed with SigV4 by object_store's
//! [`AwsAuthorizer`] (service `kms`); no AWS SDK. A copy asks for a fresh data key (GenerateDataKey,
//! `AES_256`) and keeps its ciphertext blob in the manifest; a reader asks to decrypt it (Decrypt, naming the
//! configured key, so a blob of another key is refused); a rotation onto a KMS key encrypts a data key it
//! unwrapped (Encrypt). Every request carries the encryption context of [`WrapContext::encryption_context`]
//! (segment, start offset, KEK id), so a blob moved to another segment's manifest, or relabelled with
//! another KEK id, does not decrypt. The core keeps each segment's data key in memory once unwrapped
//! ([`rsm_core::crypto::DataKeyCache`]): one Decrypt per segment and reader.
//!
//! Before a key's first use, and again after [`STATE_CHECKED_FOR`], its state is asked (DescribeKey): a key
//! that is not `Enabled` (disabled, pending deletion or import) fails at once with a config error naming
//! the setting, the key and its state, rather than whatever the operation would answer (and so also on
//! servers that do not enforce key states, such as moto). A caller not allowed DescribeKey skips the check;
//! KMS's own refusal of a disabled key (DisabledException, KMSInvalidStateException) maps to the same
//! config error.
//!
//! Credentials: `encryption.kms.access.key.id` and `encryption.kms.secret.access.key` (and
//! `encryption.kms.session.token`), else object_store's default AWS chain (the `AWS_*` environment
//! variables, web identity, ECS, instance metadata). The region is `encryption.kms.region`, else
//! `AWS_REGION` or `AWS_DEFAULT_REGION`. Errors name the setting and the KMS key id, never a credential or
//! a key: a key that is disabled, pending deletion, not found, or not allowed to this caller is a config
//! error naming `encryption.key.<id>.kms.key.id` and the key; a blob that does not decrypt (another
//! segment's, damaged) is corrupt; throttling and KMS's own failures are transient.

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use object_store::ClientOptions;
use object_store::aws::{AmazonS3Builder, AwsAuthorizer, AwsCredentialProvider};
use object_store::client::{HttpClient, HttpConnector, HttpRequestBody, ReqwestConnector};
use rsm_core::crypto::{
    ENCRYPTION_KMS_ACCESS_KEY_ID, ENCRYPTION_KMS_ENDPOINT, ENCRYPTION_KMS_REGION, KEY_LEN, KeyBytes, KeyEncryptionKey,
    KmsConnector, KmsSettings, MAX_PROVIDER_BLOB_LEN, WrapContext, Wrapped,
};
use rsm_core::{Error, Result};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Requests sent to KMS for one key, by operation (tests count them: one Decrypt per segment and reader).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KmsCalls {
    /// GenerateDataKey requests (copies).
    pub generate_data_key: u64,
    /// Decrypt requests (reads, and the old side of a rotation).
    pub decrypt: u64,
    /// Encrypt requests (the new side of a rotation onto a KMS key).
    pub encrypt: u64,
    /// DescribeKey requests (the key's state, at most once per [`STATE_CHECKED_FOR`] and key).
    pub describe_key: u64,
}

/// How long a key seen `Enabled` is not asked about again.
pub const STATE_CHECKED_FOR: Duration = Duration::from_secs(300);

fn calls() -> &'static Mutex<BTreeMap<String, KmsCalls>> {
    static CALLS: std::sync::OnceLock<Mutex<BTreeMap<String, KmsCalls>>> = std::sync::OnceLock::new();
    CALLS.get_or_init(Default::default)
}

/// The requests this process sent for the KMS key `key_id` (as the setting names it), answered or not.
pub fn calls_for(key_id: &str) -> KmsCalls {
    calls().lock().unwrap_or_else(|p| p.into_inner()).get(key_id).copied().unwrap_or_default()
}

/// The [`KmsConnector`] of AWS KMS: a host passes it where the settings are read
/// ([`rsm_core::TieredConfig::read_with_kms`]; the facade's store builder does).
#[derive(Clone, Copy, Debug, Default)]
pub struct AwsKms;

impl KmsConnector for AwsKms {
    fn connect(&self, settings: &KmsSettings, setting: &str, key_id: &str) -> Result<Arc<dyn KeyEncryptionKey>> {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let region = settings.region.clone().or_else(|| env("AWS_REGION")).or_else(|| env("AWS_DEFAULT_REGION"));
        let region = region.ok_or_else(|| {
            Error::config(
                ENCRYPTION_KMS_REGION.key,
                format!("is required for KMS key `{key_id}` (`{setting}`), unless AWS_REGION is set"),
            )
        })?;
        let endpoint = settings.endpoint.clone().unwrap_or_else(|| format!("https://kms.{region}.amazonaws.com"));
        let allow_http = endpoint.starts_with("http://");
        if !allow_http && !endpoint.starts_with("https://") {
            return Err(Error::config(ENCRYPTION_KMS_ENDPOINT.key, format!("`{endpoint}` is not an http(s) URL")));
        }
        // Static keys, else object_store's default chain; the bucket is a placeholder: only the credential
        // provider of this builder is used.
        let mut b = AmazonS3Builder::from_env().with_bucket_name("rsm-kms-credentials").with_region(&region);
        if let (Some(id), Some(secret)) = (&settings.access_key_id, &settings.secret_access_key) {
            b = b.with_access_key_id(id.expose()).with_secret_access_key(secret.expose());
            if let Some(t) = &settings.session_token {
                b = b.with_token(t.expose());
            }
        }
        let credentials = b
            .build()
            .map_err(|e| Error::config(ENCRYPTION_KMS_ACCESS_KEY_ID.key, format!("KMS credentials: {e}")))?
            .credentials()
            .clone();
        let options = ClientOptions::new()
            .with_allow_http(allow_http)
            .with_timeout(Duration::from_secs(30))
            .with_connect_timeout(Duration::from_secs(5));
        let client = ReqwestConnector::default()
            .connect(&options)
            .map_err(|e| Error::config(ENCRYPTION_KMS_ENDPOINT.key, format!("cannot make a KMS client: {e}")))?;
        Ok(Arc::new(KmsKek {
            key_id: key_id.to_string(),
            setting: setting.to_string(),
            region,
            endpoint,
            credentials,
            client,
            enabled_at: Mutex::new(None),
        }))
    }
}

/// One KMS key as a KEK. `Debug` shows the key, region and endpoint, never credentials.
struct KmsKek {
    key_id: String,
    setting: String,
    region: String,
    endpoint: String,
    credentials: AwsCredentialProvider,
    client: HttpClient,
    /// When the key was last seen `Enabled` (or its state could not be asked).
    enabled_at: Mutex<Option<std::time::Instant>>,
}

impl fmt::Debug for KmsKek {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KmsKek")
            .field("key_id", &self.key_id)
            .field("region", &self.region)
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

/// A KMS operation, named as its `X-Amz-Target` and its counter.
#[derive(Clone, Copy, Debug)]
enum Op {
    GenerateDataKey,
    Decrypt,
    Encrypt,
    DescribeKey,
}

impl KmsKek {
    fn context(ctx: &WrapContext<'_>) -> Value {
        Value::Object(ctx.encryption_context().into_iter().map(|(k, v)| (k.to_string(), Value::String(v))).collect())
    }

    /// Sends `op` with `body`, signed; the answer's JSON, or the error KMS's answer maps to.
    async fn call(&self, op: Op, body: Value, ctx: &WrapContext<'_>) -> Result<Value> {
        {
            let mut c = calls().lock().unwrap_or_else(|p| p.into_inner());
            let c = c.entry(self.key_id.clone()).or_default();
            match op {
                Op::GenerateDataKey => c.generate_data_key += 1,
                Op::Decrypt => c.decrypt += 1,
                Op::Encrypt => c.encrypt += 1,
                Op::DescribeKey => c.describe_key += 1,
            }
        }
        let what = format!("segment {}: KMS {op:?} with key `{}` (`{}`)", ctx.segment_id, self.key_id, self.setting);
        let mut body = serde_json::to_vec(&body).expect("JSON of strings");
        let request = http::Request::builder()
            .method(http::Method::POST)
            .uri(&self.endpoint)
            .header(http::header::CONTENT_TYPE, "application/x-amz-json-1.1")
            .header("x-amz-target", format!("TrentService.{op:?}"))
            .body(HttpRequestBody::from(body.clone()));
        // The body may hold a data key (Encrypt): the copy kept here is zeroed.
        body.fill(0);
        let mut request =
            request.map_err(|e| Error::config(ENCRYPTION_KMS_ENDPOINT.key, format!("{what}: bad request: {e}")))?;
        let credential = self
            .credentials
            .get_credential()
            .await
            .map_err(|e| Error::config(ENCRYPTION_KMS_ACCESS_KEY_ID.key, format!("{what}: no credentials: {e}")))?;
        AwsAuthorizer::new(&credential, "kms", &self.region)
            .try_authorize(&mut request, None)
            .map_err(|e| Error::storage(format!("{what}: cannot sign the request"), e))?;
        let response = self.client.execute(request).await.map_err(|e| Error::retriable(what.clone(), e))?;
        let status = response.status();
        let bytes = response.into_body().bytes().await.map_err(|e| Error::retriable(what.clone(), e))?;
        let mut text = bytes.to_vec();
        let parsed: std::result::Result<Value, _> = serde_json::from_slice(&text);
        text.fill(0);
        if status.is_success() {
            return parsed.map_err(|e| Error::storage(format!("{what}: the answer is not JSON"), e));
        }
        let answer = parsed.unwrap_or(Value::Null);
        let kind = answer.get("__type").and_then(Value::as_str).unwrap_or("");
        let kind = kind.rsplit('#').next().unwrap_or(kind).to_string();
        let message = answer.get("message").or_else(|| answer.get("Message")).and_then(Value::as_str).unwrap_or("");
        let told = format!("{what}: {kind} (HTTP {}) {message}", status.as_u16());
        if matches!(op, Op::DescribeKey) && kind == "AccessDeniedException" {
            // Not allowed to ask: the operations themselves say whether the key can be used.
            return Ok(Value::Null);
        }
        Err(match kind.as_str() {
            "DisabledException"
            | "KMSInvalidStateException"
            | "NotFoundException"
            | "AccessDeniedException"
            | "KeyUnavailableException" => Error::config(
                &self.setting,
                format!(
                    "KMS key `{}` cannot be used ({kind}: disabled, pending deletion, not found or not allowed): {told}",
                    self.key_id
                ),
            ),
            "UnrecognizedClientException"
            | "InvalidSignatureException"
            | "ExpiredTokenException"
            | "IncompleteSignature" => {
                Error::config(ENCRYPTION_KMS_ACCESS_KEY_ID.key, format!("KMS refused the credentials: {told}"))
            }
            "InvalidCiphertextException" | "IncorrectKeyException" => Error::corrupt(format!(
                "{told} (the manifest's wrapped key is damaged, another segment's, or was wrapped under another key)"
            )),
            _ if status.is_server_error() || status.as_u16() == 429 || kind.contains("Throttling") => {
                Error::retriable(told, "KMS")
            }
            _ => Error::storage(told, "KMS"),
        })
    }

    /// Fails with a config error naming the key when it is not `Enabled` (asked at most once per
    /// [`STATE_CHECKED_FOR`]).
    async fn check_state(&self, ctx: &WrapContext<'_>) -> Result<()> {
        let fresh = |at: &Option<std::time::Instant>| at.is_some_and(|t| t.elapsed() < STATE_CHECKED_FOR);
        if fresh(&self.enabled_at.lock().unwrap_or_else(|p| p.into_inner())) {
            return Ok(());
        }
        let answer = self.call(Op::DescribeKey, json!({"KeyId": self.key_id}), ctx).await?;
        let state = answer.pointer("/KeyMetadata/KeyState").and_then(Value::as_str).unwrap_or("Enabled");
        if state != "Enabled" {
            return Err(Error::config(
                &self.setting,
                format!("segment {}: KMS key `{}` cannot be used: its state is {state}", ctx.segment_id, self.key_id),
            ));
        }
        *self.enabled_at.lock().unwrap_or_else(|p| p.into_inner()) = Some(std::time::Instant::now());
        Ok(())
    }

    fn blob(&self, answer: &Value, ctx: &WrapContext<'_>) -> Result<Wrapped> {
        let blob = answer
            .get("CiphertextBlob")
            .and_then(Value::as_str)
            .and_then(|b| B64.decode(b).ok())
            .filter(|b| !b.is_empty() && b.len() <= MAX_PROVIDER_BLOB_LEN)
            .ok_or_else(|| {
                Error::storage(
                    format!(
                        "segment {}: KMS key `{}` answered no ciphertext blob of 1 to {MAX_PROVIDER_BLOB_LEN} bytes",
                        ctx.segment_id, self.key_id
                    ),
                    "KMS",
                )
            })?;
        Ok(Wrapped::Provider(blob))
    }

    fn plaintext(&self, answer: &mut Value, ctx: &WrapContext<'_>) -> Result<KeyBytes> {
        let text = match answer.get_mut("Plaintext") {
            Some(Value::String(s)) => std::mem::take(s),
            _ => String::new(),
        };
        let mut text = text.into_bytes();
        let decoded = B64.decode(&text);
        text.fill(0);
        let mut decoded = decoded.unwrap_or_default();
        let key = <[u8; KEY_LEN]>::try_from(decoded.as_slice()).ok().map(KeyBytes::new);
        decoded.fill(0);
        key.ok_or_else(|| {
            Error::storage(
                format!("segment {}: KMS key `{}` answered no 256-bit data key", ctx.segment_id, self.key_id),
                "KMS",
            )
        })
    }
}

#[async_trait]
impl KeyEncryptionKey for KmsKek {
    async fn generate(&self, ctx: WrapContext<'_>) -> Result<(KeyBytes, Wrapped)> {
        self.check_state(&ctx).await?;
        let body = json!({"KeyId": self.key_id, "KeySpec": "AES_256", "EncryptionContext": Self::context(&ctx)});
        let mut answer = self.call(Op::GenerateDataKey, body, &ctx).await?;
        let wrapped = self.blob(&answer, &ctx)?;
        Ok((self.plaintext(&mut answer, &ctx)?, wrapped))
    }

    async fn wrap(&self, key: &KeyBytes, ctx: WrapContext<'_>) -> Result<Wrapped> {
        self.check_state(&ctx).await?;
        let body = json!({
            "KeyId": self.key_id,
            "Plaintext": B64.encode(key.expose()),
            "EncryptionContext": Self::context(&ctx),
        });
        let answer = self.call(Op::Encrypt, body, &ctx).await?;
        self.blob(&answer, &ctx)
    }

    async fn unwrap(&self, wrapped: &Wrapped, ctx: WrapContext<'_>) -> Result<KeyBytes> {
        let Wrapped::Provider(blob) = wrapped else {
            return Err(Error::corrupt(format!(
                "segment {}: its data key was wrapped locally (a key file), and key encryption key `{}` is KMS key `{}`",
                ctx.segment_id, ctx.kek_id, self.key_id
            )));
        };
        self.check_state(&ctx).await?;
        let body = json!({
            "CiphertextBlob": B64.encode(blob),
            "KeyId": self.key_id,
            "EncryptionContext": Self::context(&ctx),
        });
        let mut answer = self.call(Op::Decrypt, body, &ctx).await?;
        self.plaintext(&mut answer, &ctx)
    }
}
