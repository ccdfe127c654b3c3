#!/usr/bin/env python3
"""Counts the public declarations of the library modules that have no doc comment.

How it counts: every line of Sources/<Module>/**/*.swift (the library modules and
ParallaxTestSupport; not the CLI) whose code starts with `public` or `open` (after any
attributes such as `@inlinable`) declares something users see. It is documented when the
lines just above it, skipping attribute lines (`@…`) and blank-free `#if`/`#endif` lines, end
in a `///` line or the `*/` of a `/** … */` block. Extensions (`public extension`) are not
declarations of their own and are not counted. The cases of a public enum are public too:
each `case` line declared directly in the body of a `public enum` (found by following the
braces) counts as one declaration. Prints each undocumented declaration as
`file:line: text` and then `undocumented public declarations: N of M`; exits 1 when N > 0.
"""
import os, re, sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
modules = ["ParallaxGeometry", "ParallaxImage", "ParallaxCapture", "ParallaxDepth", "ParallaxCalibration", "ParallaxTestSupport", "Parallax"]
declaration = re.compile(r"^(public|open)\s+(?!extension\b)")
attribute = re.compile(r"^@\w")
missing, total = [], 0
for module in modules:
    for folder, _, files in os.walk(os.path.join(root, "Sources", module)):
        for name in sorted(files):
            if not name.endswith(".swift"):
                continue
            path = os.path.join(folder, name)
            lines = open(path, encoding="utf-8").read().split("\n")
            # The type each line sits directly in: a stack of (brace depth of its body, public enum?).
            stack, depth = [], 0
            for index, line in enumerate(lines):
                code = line.strip()
                bare = re.sub(r'"(\\.|[^"\\])*"', '""', code.split("//")[0])
                in_public_enum = bool(stack) and stack[-1][0] == depth and stack[-1][1]
                opens = re.match(r"^(@\w+\s+)*((public|package|internal|private|fileprivate)\s+)?(indirect\s+)?"
                                 r"(enum|struct|class|final class|actor|protocol|extension)\b", bare)
                if opens and "{" in bare:
                    stack.append((depth + 1, opens.group(5) == "enum" and (opens.group(3) == "public"
                                  or (bool(stack) and stack[-1][2])), opens.group(5) == "extension" and opens.group(3) == "public"))
                elif opens:
                    pass
                depth += bare.count("{") - bare.count("}")
                while stack and depth < stack[-1][0]:
                    stack.pop()
                if in_public_enum and re.match(r"^case\s+[a-z_]\w*", code) and not code.endswith(":"):
                    total += 1
                    above = index - 1
                    while above >= 0 and attribute.match(lines[above].strip()):
                        above -= 1
                    previous = lines[above].strip() if above >= 0 else ""
                    if not (previous.startswith("///") or previous.endswith("*/")):
                        missing.append(f"{os.path.relpath(path, root)}:{index + 1}: {code}")
                    continue
                # Attributes written on the declaration's own line come first.
                while attribute.match(code):
                    code = re.sub(r"^@\w+(\([^)]*\))?\s*", "", code)
                if not declaration.match(code):
                    continue
                total += 1
                above = index - 1
                while above >= 0 and (attribute.match(lines[above].strip()) or lines[above].strip().startswith("#if")
                                      or lines[above].strip() in ("#endif", "#else")):
                    above -= 1
                previous = lines[above].strip() if above >= 0 else ""
                if not (previous.startswith("///") or previous.endswith("*/")):
                    missing.append(f"{os.path.relpath(path, root)}:{index + 1}: {line.strip()}")
for entry in missing:
    print(entry)
print(f"undocumented public declarations: {len(missing)} of {total}")
sys.exit(1 if missing else 0)
