#!/usr/bin/env python3
"""A stand-in for Confluent's Schema Registry, for hotrow's format tests.

The real registry is a Java service that Debian does not package, so the tests serve the part of
its documented REST API (docs.confluent.io, "Schema Registry API Reference") that Confluent's
Python serializers and hotrow use:

  POST /subjects/{subject}/versions   register: {"schema", "schemaType"?, "references"?} -> {"id"}
  POST /subjects/{subject}            look up a registered schema -> {"subject","id","version",...}
  GET  /schemas/ids/{id}[?format=serialized]          -> {"schema", "schemaType"?, "references"?}
  GET  /subjects/{subject}/versions/{version|latest}[?format=serialized]
  GET  /subjects

A schema is returned as it was registered, except a Protobuf one asked `?format=serialized`: the
real registry answers with the FileDescriptorProto it builds from the schema
(ProtobufSchema.formattedString("serialized")), in which every file is named "default", the root
and each reference alike (the root's dependency list still names its imports by their paths), and
so does this one. Confluent's Python Protobuf serializer registers the base64 FileDescriptorProto;
the real registry would answer a plain GET with the .proto text, this one with what was registered. Ids are global
and the same schema text gets the same id, as in the real registry. Unknown ids and subjects are
404 with error_code 40403 / 40401. The state is kept in --state so that a registry stopped and
started again (the outage test) serves the same ids. Every GET /schemas/ids is appended to --log.

Usage: fake_schema_registry.py --port P --state FILE [--log FILE] [--user-info user:password]
Prints "listening on PORT" once it accepts connections.
"""
import argparse
import base64
import json
import os
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def renamed_default(b64):
    """The base64 FileDescriptorProto `b64`, its file named "default" as the real registry names
    every file it serializes."""
    from google.protobuf import descriptor_pb2
    proto = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(b64))
    proto.name = "default"
    return base64.b64encode(proto.SerializeToString()).decode()


class Registry:
    def __init__(self, path):
        self.path = path
        self.schemas = {}   # id (str) -> {"schema", "schemaType", "references"}
        self.subjects = {}  # subject -> [id, ...] (version i+1 is ids[i])
        if os.path.exists(path):
            with open(path) as f:
                state = json.load(f)
            self.schemas, self.subjects = state["schemas"], state["subjects"]

    def save(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"schemas": self.schemas, "subjects": self.subjects}, f)
        os.replace(tmp, self.path)

    def register(self, subject, body):
        entry = {"schema": body["schema"], "schemaType": body.get("schemaType", "AVRO"),
                 "references": body.get("references", [])}
        for sid, existing in self.schemas.items():
            if existing == entry:
                break
        else:
            sid = str(len(self.schemas) + 1)
            self.schemas[sid] = entry
        versions = self.subjects.setdefault(subject, [])
        if int(sid) not in versions:
            versions.append(int(sid))
        self.save()
        return int(sid)

    def answer(self, sid, subject=None, version=None, serialized=False):
        entry = self.schemas[str(sid)]
        out = {"schema": entry["schema"]}
        if serialized and entry["schemaType"] == "PROTOBUF":
            out["schema"] = renamed_default(entry["schema"])
        if entry["schemaType"] != "AVRO":
            out["schemaType"] = entry["schemaType"]
        if entry["references"]:
            out["references"] = entry["references"]
        if subject is not None:
            out.update({"subject": subject, "version": version, "id": int(sid)})
        return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--state", required=True)
    parser.add_argument("--log", default="")
    parser.add_argument("--user-info", default="")
    args = parser.parse_args()
    registry = Registry(args.state)
    expected_auth = ("Basic " + base64.b64encode(args.user_info.encode()).decode()
                     if args.user_info else None)

    def serialized(query):
        return query.get("format", [""])[0] == "serialized"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def reply(self, code, body):
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def authorized(self):
            if expected_auth and self.headers.get("Authorization") != expected_auth:
                self.reply(401, {"error_code": 401, "message": "Unauthorized"})
                return False
            return True

        def parts(self):
            url = urllib.parse.urlsplit(self.path)
            segments = [urllib.parse.unquote(s) for s in url.path.split("/") if s]
            return segments, urllib.parse.parse_qs(url.query)

        def do_GET(self):
            if not self.authorized():
                return
            segments, query = self.parts()
            if len(segments) == 3 and segments[:2] == ["schemas", "ids"]:
                if args.log:
                    with open(args.log, "a") as f:
                        f.write(self.path + "\n")
                if segments[2] not in registry.schemas:
                    return self.reply(404, {"error_code": 40403, "message": "Schema not found"})
                return self.reply(200, registry.answer(segments[2],
                                                       serialized=serialized(query)))
            if len(segments) == 4 and segments[0] == "subjects" and segments[2] == "versions":
                versions = registry.subjects.get(segments[1])
                if not versions:
                    return self.reply(404, {"error_code": 40401, "message": "Subject not found"})
                v = len(versions) if segments[3] == "latest" else int(segments[3])
                if v < 1 or v > len(versions):
                    return self.reply(404, {"error_code": 40402, "message": "Version not found"})
                return self.reply(200, registry.answer(versions[v - 1], segments[1], v,
                                                       serialized=serialized(query)))
            if segments == ["subjects"]:
                return self.reply(200, sorted(registry.subjects))
            self.reply(404, {"error_code": 404, "message": "unknown path"})

        def do_POST(self):
            if not self.authorized():
                return
            segments, _ = self.parts()
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            if len(segments) == 3 and segments[0] == "subjects" and segments[2] == "versions":
                return self.reply(200, {"id": registry.register(segments[1], body)})
            if len(segments) == 2 and segments[0] == "subjects":
                entry = {"schema": body["schema"], "schemaType": body.get("schemaType", "AVRO"),
                         "references": body.get("references", [])}
                for i, sid in enumerate(registry.subjects.get(segments[1], [])):
                    if registry.schemas[str(sid)] == entry:
                        return self.reply(200, registry.answer(sid, segments[1], i + 1))
                return self.reply(404, {"error_code": 40403, "message": "Schema not found"})
            self.reply(404, {"error_code": 404, "message": "unknown path"})

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print("listening on %d" % args.port, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
