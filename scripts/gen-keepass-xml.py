#!/usr/bin/env python3
"""Writes a KeePass 2 XML file with N entries (benchmarks): 100 groups, each
entry with Title, UserName, Password (protected), URL, Notes and one
protected custom string.  usage: gen-keepass-xml.py N OUT"""
import base64, sys, uuid

n, out = int(sys.argv[1]), sys.argv[2]
u = lambda: base64.b64encode(uuid.uuid4().bytes).decode()
with open(out, "w", encoding="utf-8") as f:
    f.write('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<KeePassFile>\n<Meta><Generator>bench</Generator></Meta>\n<Root>\n<Group><UUID>%s</UUID><Name>Root</Name>\n' % u())
    per = max(1, n // 100)
    for g in range(0, n, per):
        f.write('<Group><UUID>%s</UUID><Name>group-%d</Name>\n' % (u(), g // per))
        for i in range(g, min(n, g + per)):
            f.write('<Entry><UUID>%s</UUID><Times><Expires>False</Expires></Times>'
                    '<String><Key>Title</Key><Value>entry-%d</Value></String>'
                    '<String><Key>UserName</Key><Value>user%d@example.com</Value></String>'
                    '<String><Key>Password</Key><Value ProtectInMemory="True">pw-%s</Value></String>'
                    '<String><Key>URL</Key><Value>https://site%d.example.com/login</Value></String>'
                    '<String><Key>Notes</Key><Value>note for entry %d</Value></String>'
                    '<String><Key>api token</Key><Value ProtectInMemory="True">tok-%s</Value></String>'
                    '</Entry>\n' % (u(), i, i, uuid.uuid4().hex, i, i, uuid.uuid4().hex))
        f.write('</Group>\n')
    f.write('</Group>\n</Root>\n</KeePassFile>\n')
