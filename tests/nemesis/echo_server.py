"""A tiny TCP echo server used as a stand-in node in nemesis tests: ``echo_server.py HOST PORT``."""

import socket
import sys
import threading


def serve(host: str, port: int) -> None:
    """Accept connections forever and echo what each sends."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((host, port))
    srv.listen(64)
    print(f"listening {host}:{port}", file=sys.stderr, flush=True)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=_echo, args=(conn,), daemon=True).start()


def _echo(conn: socket.socket) -> None:
    with conn:
        while data := conn.recv(4096):
            conn.sendall(data)


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
