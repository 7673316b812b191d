"""`streams console`: serve the web console (streams/console) on a local port."""

from __future__ import annotations

import argparse
import logging
import ssl
import sys

from .client import add_bootstrap_argument

PROG = "streams console"


def add_parser(sub: argparse._SubParsersAction) -> None:
    console = sub.add_parser("console", help="web console: brokers, topics, groups, "
                                             "connectors, schemas, streams apps")
    add_bootstrap_argument(console)
    console.add_argument("--connect-url", metavar="URL",
                         help="a Kafka Connect worker's REST address, e.g. http://127.0.0.1:8083")
    console.add_argument("--registry-url", metavar="URL",
                         help="the schema registry, to decode Avro, Protobuf and JSON Schema "
                              "records in the message browser")
    console.add_argument("--metrics-url", metavar="[ID=]URL", action="append",
                         help="a broker's Prometheus endpoint (its metrics.listener, e.g. "
                              "http://127.0.0.1:9404/metrics) for request rates on /brokers; "
                              "ID=URL per broker of a cluster (repeat)")
    console.add_argument("--host", default="127.0.0.1",
                         help="address to listen on (default 127.0.0.1: this machine only)")
    console.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    console.add_argument("--read-only", action="store_true",
                         help="refuse every change (create, delete, config edits, actions)")
    console.add_argument("--users-file", metavar="FILE",
                         help="turn on HTTP basic auth: lines user:SHA256-HEX-OF-PASSWORD")
    console.add_argument("--tls-cert", metavar="PEM", help="serve HTTPS with this certificate")
    console.add_argument("--tls-key", metavar="PEM", help="the certificate's private key")
    console.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from aiohttp import web

    from ..console.brokers import parse_metrics_urls
    from ..console.cluster import Cluster, ConsoleError
    from ..console.server import build_app, read_users

    if bool(args.tls_cert) != bool(args.tls_key):
        print(f"{PROG}: give both --tls-cert and --tls-key", file=sys.stderr)
        return 2
    try:
        users = read_users(args.users_file) if args.users_file else None
        metrics_urls = parse_metrics_urls(args.metrics_url)
    except (OSError, ValueError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    context = None
    if args.tls_cert:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        try:
            context.load_cert_chain(args.tls_cert, args.tls_key)
        except (OSError, ssl.SSLError) as exc:
            print(f"{PROG}: cannot load the TLS certificate: {exc}", file=sys.stderr)
            return 2
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    app = build_app(Cluster(args), read_only=args.read_only, connect_url=args.connect_url,
                    users=users, registry_url=args.registry_url, metrics_urls=metrics_urls)
    scheme = "https" if context else "http"
    try:
        web.run_app(app, host=args.host, port=args.port, ssl_context=context,
                    print=lambda _m: print(f"streams console on {scheme}://{args.host}:"
                                           f"{args.port}/", flush=True),
                    access_log=None)
    except ConsoleError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"{PROG}: cannot listen on {args.host}:{args.port}: {exc.strerror}",
              file=sys.stderr)
        return 1
    return 0
