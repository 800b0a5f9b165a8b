"""Regenerate fixtures.txt from a reference redis-server 7.0 (not run by the tests).

    redis-server --port 23571 --save '' --daemonize yes
    python make_fixtures.py 23571 > fixtures.txt

Lines:
  P lon lat score geopos_lon geopos_lat geohash     one GEOADD'ed point (inputs as %.9f)
  D i j unit dist                                  GEODIST between points i and j
  S kind lon lat a b unit count|0 any|- members... GEOSEARCH over every point (member = index),
                                                   WITHDIST ASC: member:dist pairs
"""
import random
import sys

import redis

r = redis.Redis(port=int(sys.argv[1]), protocol=2)
r.flushall()
for name in ("GEOPOS", "GEODIST", "GEOSEARCH", "GEOHASH"):
    r.set_response_callback(name, lambda x, **kw: x)
rng = random.Random(20240607)
units = ["m", "km", "ft", "mi"]
pts = []
for i in range(600):
    if i < 200:
        lon, lat = rng.uniform(-180, 180), rng.uniform(-85.05112878, 85.05112878)
    elif i < 400:
        lon, lat = rng.uniform(12, 14), rng.uniform(41, 42.5)
    else:
        lon, lat = rng.uniform(-75, -73), rng.uniform(-41, -40)
    if i in (0, 1):
        lon, lat = (180, 85.05112878) if i == 0 else (-180, -85.05112878)
    lon, lat = float("%.9f" % lon), float("%.9f" % lat)
    pts.append((lon, lat))
    r.geoadd("g", (lon, lat, str(i)))
for i, (lon, lat) in enumerate(pts):
    score = int(r.zscore("g", str(i)))
    raw = r.execute_command("GEOPOS", "g", str(i))[0]
    h = r.execute_command("GEOHASH", "g", str(i))[0].decode()
    print("P %.9f %.9f %d %s %s %s" % (lon, lat, score, raw[0].decode(), raw[1].decode(), h))
for _ in range(400):
    i, j = rng.randrange(600), rng.randrange(600)
    u = rng.choice(units)
    d = r.execute_command("GEODIST", "g", str(i), str(j), u).decode()
    print("D %d %d %s %s" % (i, j, u, d))
for _ in range(300):
    c = rng.choice([(12, 14, 41, 42.5), (-75, -73, -41, -40), (-180, 180, -85, 85)])
    lon, lat = float("%.6f" % rng.uniform(c[0], c[1])), float("%.6f" % rng.uniform(c[2], c[3]))
    u = rng.choice(units)
    scale = {"m": 1, "km": 1000, "ft": 0.3048, "mi": 1609.34}[u]
    size = rng.choice([1000, 20000, 80000, 300000, 3000000]) / scale
    count = rng.choice([0, 0, 5, 50])
    anyf = count and rng.random() < 0.3
    args = ["GEOSEARCH", "g", "FROMLONLAT", lon, lat]
    if rng.random() < 0.5:
        kind, a, b = "R", float("%.3f" % size), 0.0
        args += ["BYRADIUS", a, u]
    else:
        kind, a, b = "B", float("%.3f" % size), float("%.3f" % (size * rng.uniform(0.3, 2)))
        args += ["BYBOX", a, b, u]
    if count:
        args += ["COUNT", count] + (["ANY"] if anyf else [])
    args += ["WITHDIST"] + ([] if anyf and rng.random() < 0.5 else ["ASC"])
    sort = "ASC" in args
    res = r.execute_command(*args)
    items = " ".join("%s:%s" % (m.decode(), d.decode()) for m, d in res)
    print("S %s %.6f %.6f %.3f %.3f %s %d %s %s %s" % (
        kind, lon, lat, a, b, u, count, "any" if anyf else "-", "asc" if sort else "-", items))
