#!/usr/bin/env python3
"""Writes Avro or Protobuf records with Confluent's own Python serializers, for hotrow's format
tests, and the JSON an independent decoder makes of each record (the tests' oracle).

  avro      confluent_kafka.avro.AvroProducer (python3-avro underneath), through the registry;
            the oracle is python3-avro's DatumReader over the same bytes, mapped as CONTRACT.md
            says (union: the branch's value, bytes/fixed: base64, decimal: its text,
            timestamp-millis/micros: integers).
  protobuf  confluent_kafka SerializingProducer with schema_registry.protobuf.ProtobufSerializer
            (python3-protobuf, classes made by protoc), key "dev-N", headers, a Kafka timestamp;
            the oracle is protobuf's json_format.MessageToDict(preserving_proto_field_name,
            including_default_value_fields) of the message parsed back, 64-bit integers as
            numbers.
  avro-ref  an Avro schema naming a type another subject defines (a schema reference): both
            registered through the registry's REST API (AvroProducer 1.7.0 cannot register
            references), records written by python3-avro's DatumWriter with the referenced type
            parsed first, framed as Confluent frames them; the oracle is DatumReader's datum.
  raw       sends the values of a file of hex lines as they are (records encoded earlier, or bad).

Each produced record adds a line {"seq": N, "event": <oracle JSON>} to --expected; with --encode
FILE the framed values are also written there as hex lines (for `raw`).
"""
import argparse
import base64
import datetime
import decimal
import importlib
import io
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def avro_value(i, version):
    value = {
        "device_id": "dev-%d" % (i % 7), "seq": i, "ts": None, "temp": 20.5 + i / 8,
        "humidity": 0.25 * (i % 5), "status": ["OK", "DEGRADED", "FAILED"][i % 3],
        "alarm": i % 2 == 0, "raw": bytes([i % 256, 0, 255, 10]),
        "price": decimal.Decimal(i * 101 - 500).scaleb(-2),
        "mac": bytes([0xaa, 0xbb, 0xcc, 0, 1, i % 256]),
        "note": None if i % 3 == 0 else "n\"ote \u00e9 %d" % i,
        "level": [None, i, "L%d" % i][i % 3],
        "codes": list(range(i % 4)), "tags": {"k%d" % j: "v%d" % (i + j) for j in range(i % 3)},
        "site": {"name": "site-%d" % (i % 4), "floor": i % 9},
        "micros": 1_700_000_000_000_000 + i,
    }
    if version == 2:
        value["firmware"] = "2.%d" % (i % 5)
    return value


def avro_oracle(datum):
    def conv(v):
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, list):
            return [conv(x) for x in v]
        if isinstance(v, bytes):
            return base64.b64encode(v).decode()
        if isinstance(v, decimal.Decimal):
            return format(v, "f")
        if isinstance(v, datetime.datetime):
            delta = v - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
            return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
        return v
    out = conv(datum)
    out["ts"] //= 1000  # timestamp-millis: datetime in micros above
    return out


def run_avro(args, out):
    from avro.io import BinaryDecoder, DatumReader
    from confluent_kafka import avro as cavro
    schemas = {v: cavro.load(os.path.join(HERE, "reading_v%d.avsc" % v)) for v in (1, 2)}
    producer = cavro.AvroProducer({"bootstrap.servers": args.bootstrap,
                                   "schema.registry.url": args.registry})
    encoded = open(args.encode, "w") if args.encode else None
    for n in range(args.count):
        i = args.start + n
        version = 1 if args.versions == "1" else 2 if args.versions == "2" else 1 + n % 2
        value = avro_value(i, version)
        value["ts"] = datetime.datetime.fromtimestamp((args.ts_base + i) / 1000,
                                                      tz=datetime.timezone.utc)
        value["micros"] = datetime.datetime.fromtimestamp(value["micros"] / 1_000_000,
                                                          tz=datetime.timezone.utc)
        framed = producer._serializer.encode_record_with_schema(args.topic, schemas[version], value)
        reader = DatumReader(schemas[version])
        datum = reader.read(BinaryDecoder(io.BytesIO(framed[5:])))
        if encoded:
            encoded.write(framed.hex() + "\n")
        if not args.encode_only:
            producer.produce(topic=args.topic, value=value, value_schema=schemas[version])
        out.write(json.dumps({"seq": i, "event": avro_oracle(datum)}) + "\n")
    producer.flush(30)


SITE_AVSC = {"type": "record", "name": "Site", "namespace": "hotrow.test",
             "fields": [{"name": "name", "type": "string"}, {"name": "floor", "type": "int"}]}
READING_REF_AVSC = {"type": "record", "name": "ReadingRef", "namespace": "hotrow.test",
                    "fields": [{"name": "device_id", "type": "string"},
                               {"name": "seq", "type": "long"},
                               {"name": "site", "type": "Site"},
                               {"name": "spare", "type": ["null", "hotrow.test.Site"]}]}


def run_avro_ref(args, out):
    import avro.name
    import avro.schema
    import requests
    import struct
    from avro.io import BinaryDecoder, BinaryEncoder, DatumReader, DatumWriter
    from confluent_kafka import Producer

    def register(subject, body):
        r = requests.post("%s/subjects/%s/versions" % (args.registry, subject), json=body)
        r.raise_for_status()
        return r.json()["id"]
    register("site-value", {"schema": json.dumps(SITE_AVSC)})
    sid = register(args.topic + "-value", {
        "schema": json.dumps(READING_REF_AVSC),
        "references": [{"name": "hotrow.test.Site", "subject": "site-value", "version": 1}]})
    names = avro.name.Names()
    avro.schema.make_avsc_object(SITE_AVSC, names)
    schema = avro.schema.make_avsc_object(READING_REF_AVSC, names)
    producer = Producer({"bootstrap.servers": args.bootstrap})
    for n in range(args.count):
        i = args.start + n
        value = {"device_id": "dev-%d" % (i % 7), "seq": i,
                 "site": {"name": "site-%d" % (i % 4), "floor": i % 9},
                 "spare": None if i % 2 else {"name": "spare", "floor": -i}}
        buf = io.BytesIO()
        DatumWriter(schema).write(value, BinaryEncoder(buf))
        framed = b"\0" + struct.pack(">I", sid) + buf.getvalue()
        datum = DatumReader(schema).read(BinaryDecoder(io.BytesIO(framed[5:])))
        producer.produce(args.topic, value=framed, timestamp=args.ts_base + i)
        out.write(json.dumps({"seq": i, "event": datum}) + "\n")
    producer.flush(30)


def compile_proto():
    work = tempfile.mkdtemp(prefix="hotrow-proto-")
    subprocess.run(["protoc", "-I", HERE, "--python_out", work, "reading.proto", "site.proto"],
                   check=True)
    sys.path.insert(0, work)
    return importlib.import_module("reading_pb2")


def numbers_for_64_bits(d, descriptor):
    from google.protobuf.descriptor import FieldDescriptor as F
    wide = (F.TYPE_INT64, F.TYPE_UINT64, F.TYPE_SINT64, F.TYPE_FIXED64, F.TYPE_SFIXED64)
    for f in descriptor.fields:
        if f.name not in d:
            continue
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            vf = f.message_type.fields_by_name["value"]
            if vf.message_type is not None:
                for v in d[f.name].values():
                    numbers_for_64_bits(v, vf.message_type)
            elif vf.type in wide:
                d[f.name] = {k: int(v) for k, v in d[f.name].items()}
        elif f.message_type is not None:
            items = d[f.name] if f.label == F.LABEL_REPEATED else [d[f.name]]
            for item in items:
                numbers_for_64_bits(item, f.message_type)
        elif f.type in wide:
            d[f.name] = [int(v) for v in d[f.name]] if f.label == F.LABEL_REPEATED else int(d[f.name])


def run_protobuf(args, out):
    from confluent_kafka import SerializingProducer
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import (MessageField, SerializationContext,
                                               StringSerializer)
    from google.protobuf import json_format
    pb = compile_proto()
    registry = SchemaRegistryClient({"url": args.registry})
    serializer = ProtobufSerializer(pb.Reading, registry)
    producer = SerializingProducer({"bootstrap.servers": args.bootstrap,
                                    "key.serializer": StringSerializer("utf_8"),
                                    "value.serializer": serializer})
    encoded = open(args.encode, "w") if args.encode else None
    for n in range(args.count):
        i = args.start + n
        m = pb.Reading(device_id="dev-%d" % (i % 7), seq=i, ts=args.ts_base + i,
                       temp=20.5 + i / 8, humidity=0.25 * (i % 5), status=i % 3,
                       alarm=i % 2 == 0, raw=bytes([i % 256, 0, 255]),
                       counter=(1 << 63) + i if i % 2 else i, delta=-i, flags=i * 3,
                       codes=list(range(i % 4)),
                       tags={"k%d" % j: "v%d" % (i + j) for j in range(i % 3)})
        for j in range(i % 3):
            m.samples.add(at=j, value=j / 4)
        if i % 4:
            m.site.name = "site-%d" % (i % 4)
            m.site.floor = i % 9
        if i % 3 == 1:
            m.note = "n\"ote %d" % i
        elif i % 3 == 2:
            m.level = i
        if i % 2:
            m.firmware = "3.%d" % i
        ctx = SerializationContext(args.topic, MessageField.VALUE)
        framed = serializer(m, ctx)
        parsed = pb.Reading.FromString(framed[6:])  # magic, id, the single index byte 0
        event = json_format.MessageToDict(parsed, preserving_proto_field_name=True,
                                          including_default_value_fields=True)
        numbers_for_64_bits(event, pb.Reading.DESCRIPTOR)
        if encoded:
            encoded.write(framed.hex() + "\n")
        producer.produce(topic=args.topic, key="dev-%d" % (i % 7), value=m,
                         headers=[("site", ("site-%d" % (i % 4)).encode()),
                                  ("bin", bytes([0xff, 0xfe, i % 256]))],
                         timestamp=args.ts_base + i)
        out.write(json.dumps({"seq": i, "event": event}) + "\n")
    producer.flush(30)


def run_raw(args):
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": args.bootstrap})
    with open(args.values) as f:
        for line in f:
            producer.produce(args.topic, value=bytes.fromhex(line.strip()))
    producer.flush(30)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["avro", "avro-ref", "protobuf", "raw"])
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--registry", default="")
    p.add_argument("--count", type=int, default=0)
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--versions", default="1", choices=["1", "2", "mix"])
    p.add_argument("--ts-base", type=int, default=0)
    p.add_argument("--expected", default=os.devnull)
    p.add_argument("--encode", default="")
    p.add_argument("--encode-only", action="store_true")
    p.add_argument("--values", default="")
    args = p.parse_args()
    if args.mode == "raw":
        return run_raw(args)
    with open(args.expected, "a") as out:
        {"avro": run_avro, "avro-ref": run_avro_ref, "protobuf": run_protobuf}[args.mode](args, out)
    print("produced %d" % args.count, flush=True)


if __name__ == "__main__":
    sys.exit(main())
