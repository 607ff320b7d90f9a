"""Asks api.test for a forecast (a test host the egress suite provides)."""
import json
import socket
import sys

city = sys.argv[sys.argv.index("--city") + 1] if "--city" in sys.argv else "Oslo"
try:
    with socket.create_connection(("api.test", 443), timeout=5) as s:
        s.sendall(f"GET /v1/forecast?city={city} HTTP/1.0\r\nHost: api.test\r\n\r\n".encode())
        body = s.recv(65536).decode(errors="replace")
except OSError as e:
    print(f"egress failed: {e}", file=sys.stderr)
    sys.exit(1)
with open("/workdir/out/forecast.json", "w") as f:
    json.dump({"city": city, "response": body.split("\r\n\r\n", 1)[-1]}, f)
