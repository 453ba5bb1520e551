"""Digests: each tenant's chain head, published outside the database and signed.

The model is CloudTrail's log file integrity validation. On a schedule, a digest per tenant
records the head of its chain (seq, row hash and time of the last row) and its prune
checkpoint, links to the previous digest by that object's SHA-256, and is signed. Anyone who
can rewrite the database can re-forge the chain, its head and its checkpoints so that they
agree with each other; they cannot rewrite a digest. Verification compares the chain with
the latest digest, so a truncated tail (head moved back with it), a chain re-forged from any
row with its head, or a rewritten prune checkpoint are all found.

Where digests live:

- on AWS, an S3 bucket with Object Lock in compliance mode (retention at least the audit
  floor: nobody, the root account included, deletes or overwrites a digest before then),
  signed with a KMS asymmetric key (ECDSA P-256; the private half never leaves KMS);
- locally, files under ``$STRATA_HOME/audit-digests/<tenant>/``, written once and read-only,
  signed with HMAC-SHA256 under a key in ``$STRATA_HOME/audit-digests.key`` (0600). That key
  is outside the database, which is what anchoring needs; it is a shared secret, so whoever
  can read it can forge digests -- keep it, or the folder, where the database's users cannot.

A digest holds ids, sequence numbers and hashes only: never content.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from strata.audit.chain import GENESIS, canonical

if TYPE_CHECKING:
    import psycopg

    from strata.foundation.config import Settings

VERSION = 1


class Signer(Protocol):
    algorithm: str
    key_id: str

    def sign(self, message: bytes) -> bytes: ...

    def verify(self, message: bytes, signature: bytes) -> bool: ...


class Store(Protocol):
    where: str  # for reports: a folder or s3://bucket/prefix

    def put(self, name: str, body: bytes) -> None:
        """Write once: an existing name is never overwritten (raises FileExistsError)."""

    def get(self, name: str) -> bytes: ...

    def names(self, tenant_id: uuid.UUID, after: str | None = None) -> list[str]:
        """The tenant's digest names, oldest first; with ``after``, only those that sort
        after it (a name, or the start of one)."""


# ---------------------------------------------------------------------------- local


class HmacSigner:
    """HMAC-SHA256 under a 32-byte key kept in a file (created 0600 on first use)."""

    algorithm = "HMAC_SHA_256"

    def __init__(self, key_file: Path) -> None:
        self.key_file = key_file
        self._key: bytes | None = None

    @property
    def key(self) -> bytes:
        if self._key is None:
            try:
                self._key = bytes.fromhex(self.key_file.read_text().strip())
            except FileNotFoundError:
                self.key_file.parent.mkdir(parents=True, exist_ok=True)
                key = secrets.token_bytes(32)
                try:
                    fd = os.open(self.key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                except FileExistsError:  # another process made it first: use theirs
                    return self.key
                with os.fdopen(fd, "w") as fh:
                    fh.write(key.hex())
                self._key = key
        return self._key

    @property
    def key_id(self) -> str:  # names the key without revealing it
        return "local:" + hashlib.sha256(b"strata audit digest key id" + self.key).hexdigest()[:16]

    def sign(self, message: bytes) -> bytes:
        return hmac.digest(self.key, message, "sha256")

    def verify(self, message: bytes, signature: bytes) -> bool:
        return hmac.compare_digest(self.sign(message), signature)


class FileStore:
    """One file per digest, created exclusively and left read-only."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.where = str(root)

    def put(self, name: str, body: bytes) -> None:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        with os.fdopen(fd, "wb") as fh:
            fh.write(body)
            fh.flush()
            os.fsync(fh.fileno())

    def get(self, name: str) -> bytes:
        return (self.root / name).read_bytes()

    def names(self, tenant_id: uuid.UUID, after: str | None = None) -> list[str]:
        folder = self.root / str(tenant_id)
        if not folder.is_dir():
            return []
        names = sorted(f"{tenant_id}/{p.name}" for p in folder.glob("*.json"))
        return [n for n in names if after is None or n > after]


# ---------------------------------------------------------------------------- AWS


class KmsSigner:
    """ECDSA P-256 with SHA-256 by a KMS asymmetric key (KeySpec ECC_NIST_P256, SIGN_VERIFY)."""

    algorithm = "ECDSA_SHA_256"

    def __init__(self, key_id: str, client: Any = None) -> None:
        self.key_id = key_id
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            from strata.foundation import aws

            self._client = aws.client("kms")
        return self._client

    def sign(self, message: bytes) -> bytes:
        return self.client.sign(KeyId=self.key_id, Message=message, MessageType="RAW",
                                SigningAlgorithm=self.algorithm)["Signature"]

    def verify(self, message: bytes, signature: bytes) -> bool:
        try:
            answer = self.client.verify(KeyId=self.key_id, Message=message, MessageType="RAW",
                                        Signature=signature, SigningAlgorithm=self.algorithm)
        except self.client.exceptions.KMSInvalidSignatureException:
            return False
        return bool(answer["SignatureValid"])


class S3Store:
    """Digests as objects under ``prefix`` in a bucket with Object Lock (compliance mode).

    Each put also sets the object's own retention (the bucket's default applies too) and
    ``If-None-Match: *``, so a name that exists is refused rather than versioned over.
    """

    def __init__(self, bucket: str, *, prefix: str = "audit-digests/", retention_days: int,
                 client: Any = None) -> None:
        self.bucket, self.prefix, self.retention_days = bucket, prefix, retention_days
        self.where = f"s3://{bucket}/{prefix}"
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            from strata.foundation import aws

            self._client = aws.client("s3")
        return self._client

    def put(self, name: str, body: bytes) -> None:
        from botocore.exceptions import ClientError

        until = datetime.now(UTC) + timedelta(days=self.retention_days)
        try:
            self.client.put_object(
                Bucket=self.bucket, Key=self.prefix + name, Body=body,
                ContentType="application/json", IfNoneMatch="*", ChecksumAlgorithm="SHA256",
                ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=until)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "PreconditionFailed":
                raise FileExistsError(name) from None
            raise

    def get(self, name: str) -> bytes:
        return self.client.get_object(Bucket=self.bucket, Key=self.prefix + name)["Body"].read()

    def names(self, tenant_id: uuid.UUID, after: str | None = None) -> list[str]:
        start = {"StartAfter": self.prefix + after} if after else {}
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=f"{self.prefix}{tenant_id}/", **start)
        keys = [o["Key"] for page in pages for o in page.get("Contents", [])]
        return sorted(k[len(self.prefix):] for k in keys if k.endswith(".json"))


# ---------------------------------------------------------------------------- digests


@dataclass(frozen=True)
class Digest:
    name: str
    body: dict[str, Any]  # the signed fields
    raw: bytes  # the object as stored (what the next digest's previous.sha256 hashes)
    signature_ok: bool

    @property
    def head_seq(self) -> int:
        return int(self.body["head"]["seq"])

    @property
    def head_hash(self) -> bytes:
        return bytes.fromhex(self.body["head"]["row_hash"])

    @property
    def head_at(self) -> datetime | None:
        at = self.body["head"].get("at")
        return datetime.fromisoformat(at) if at else None

    @property
    def pruned(self) -> tuple[int, bytes] | None:
        p = self.body.get("pruned")
        return (int(p["seq"]), bytes.fromhex(p["row_hash"])) if p else None

    @property
    def published_at(self) -> str:
        return self.body["published_at"]


# How far back :meth:`Digests.latest` lists before widening; None: everything.
LATEST_WINDOWS_DAYS = (2, 60, None)


def _name(tenant_id: uuid.UUID, published: datetime, head_seq: int) -> str:
    # Sorted by name is sorted by time: the latest digest is the last name.
    return f"{tenant_id}/{published:%Y%m%dT%H%M%S%fZ}-{head_seq:019d}.json"


class Digests:
    """Publish and read one tenant's digests in a store, signed by a signer."""

    def __init__(self, store: Store, signer: Signer) -> None:
        self.store, self.signer = store, signer

    def read(self, name: str) -> Digest:
        raw = self.store.get(name)
        try:
            doc = json.loads(raw)
            body, sig = doc["digest"], doc["signature"]
            signature = base64.b64decode(sig["value"], validate=True)
            ok = (sig.get("algorithm") == self.signer.algorithm
                  and self.signer.verify(canonical(body), signature))
            int(body["head"]["seq"]), bytes.fromhex(body["head"]["row_hash"])  # its shape
        except (ValueError, KeyError, TypeError, AttributeError):  # not a digest: unsigned
            return Digest(name, {"head": {"seq": -1, "row_hash": ""}, "published_at": ""}, raw, False)
        return Digest(name, body, raw, ok)

    def latest(self, tenant_id: uuid.UUID, *, now: datetime | None = None
               ) -> tuple[Digest | None, Digest | None]:
        """The latest digest and the one before it (either may be None).

        A busy tenant has a digest a minute, so listing all of its names on every call
        would grow without end: the names are listed from a recent time on (names sort by
        publication time), widening the window until two are found or the whole list is
        read."""
        now = now or datetime.now(UTC)
        for days in LATEST_WINDOWS_DAYS:
            after = f"{tenant_id}/{now - timedelta(days=days):%Y%m%dT%H%M%S%fZ}" if days else None
            names = self.store.names(tenant_id, after=after)
            if len(names) >= 2:
                break
        latest = self.read(names[-1]) if names else None
        previous = self.read(names[-2]) if len(names) > 1 else None
        return latest, previous

    def publish(self, conn: psycopg.Connection, tenant_id: uuid.UUID, seq: int, *,
                now: datetime | None = None) -> dict[str, Any]:
        """Publish ``seq`` (a row verification vouched for) as the tenant's head, unless the
        latest digest already holds it and the same prune checkpoint."""
        now = now or datetime.now(UTC)
        pruned = conn.execute(
            "SELECT seq, row_hash FROM audit_checkpoints WHERE tenant_id = %s AND kind = 'pruned'",
            (tenant_id,)).fetchone()
        row = conn.execute("SELECT row_hash, at FROM audit_log WHERE tenant_id = %s AND seq = %s",
                           (tenant_id, seq)).fetchone()
        if row is not None:
            row_hash, at = bytes(row["row_hash"]), row["at"].astimezone(UTC).isoformat()
        elif pruned is not None and pruned["seq"] == seq:
            row_hash, at = bytes(pruned["row_hash"]), None
        elif seq == 0:
            row_hash, at = GENESIS, None
        else:
            raise LookupError(f"seq {seq} is not in the chain")
        latest, _ = self.latest(tenant_id)
        body: dict[str, Any] = {
            "version": VERSION,
            "tenant_id": str(tenant_id),
            "published_at": now.astimezone(UTC).isoformat(),
            "head": {"seq": seq, "row_hash": row_hash.hex(), "at": at},
            "pruned": ({"seq": pruned["seq"], "row_hash": bytes(pruned["row_hash"]).hex()}
                       if pruned else None),
            "previous": ({"name": latest.name, "sha256": hashlib.sha256(latest.raw).hexdigest()}
                         if latest else None),
            "signing": {"algorithm": self.signer.algorithm, "key_id": self.signer.key_id},
        }
        if (latest is not None and latest.signature_ok and latest.head_seq == seq
                and latest.head_hash == row_hash and latest.body.get("pruned") == body["pruned"]):
            return {"published": False, "reason": "unchanged", "digest": latest.name, "head_seq": seq}
        signature = self.signer.sign(canonical(body))
        raw = json.dumps({"digest": body, "signature": {
            "algorithm": self.signer.algorithm, "key_id": self.signer.key_id,
            "value": base64.b64encode(signature).decode()}}, sort_keys=True, indent=1).encode()
        name = _name(tenant_id, now, seq)
        self.store.put(name, raw)
        return {"published": True, "digest": name, "head_seq": seq}


def from_settings(settings: Settings) -> Digests | None:
    """The deployment's digests: S3 + KMS when a bucket is configured, local files locally,
    none on AWS without a bucket (verification then reports the chain as unanchored)."""
    if settings.audit_digest_bucket:
        if not settings.audit_digest_key_id:
            raise ValueError("STRATA_AUDIT_DIGEST_BUCKET needs STRATA_AUDIT_DIGEST_KEY_ID")
        from strata.audit.maintenance import RETENTION_FLOOR_DAYS

        return Digests(
            S3Store(settings.audit_digest_bucket,
                    retention_days=max(settings.audit_retention_days, RETENTION_FLOOR_DAYS)),
            KmsSigner(settings.audit_digest_key_id))
    if settings.runtime == "aws":
        return None
    return Digests(FileStore(settings.home / "audit-digests"),
                   HmacSigner(settings.home / "audit-digests.key"))
