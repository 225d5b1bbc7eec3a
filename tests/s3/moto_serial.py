"""moto's S3 server, one request at a time.

    python moto_serial.py HOST PORT

moto (5.2.5, moto/s3/responses.py, put_object) checks If-None-Match and
If-Match and then stores the object, with no lock between the two, on
threads that share the interpreter: of simultaneous conditional writes to
one key, nothing keeps a second from passing its check before the first
is stored (not seen here in 200 rounds of eight writers, but possible).
Taken one at a time, requests make its conditional writes atomic, as
S3's are, and the tests that race writers deterministic. Otherwise this
is `python -m moto.server`.
"""

import os
import sys
import threading

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import run_simple


def main() -> None:
    host, port = sys.argv[1], int(sys.argv[2])
    os.environ.setdefault("MOTO_PORT", str(port))
    app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()

    def one_at_a_time(environ, start_response):
        with lock:
            # The whole response inside the lock: moto may produce it lazily.
            return [b"".join(app(environ, start_response))]

    run_simple(host, port, one_at_a_time, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
