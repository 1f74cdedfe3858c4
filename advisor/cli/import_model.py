"""`advisor import-model`: size any model from a Hugging Face config.json, a GGUF file or a folder.

    advisor import-model SOURCE [--name NAME] [--save] [--json]

SOURCE is a ``config.json``, a folder holding one (with its safetensors checkpoint, for the exact
bytes), a ``.gguf`` file, or ``hf:org/name`` (config.json and the safetensors index through the
Hugging Face cache; HF_HUB_OFFLINE=1 uses the cache only). Prints the derived spec; ``--save``
writes it to the user catalog (``imported-models.yaml`` in the data folder) so that its name works
everywhere a model name does. Any ``--model`` also accepts SOURCE directly, without saving.
"""

from __future__ import annotations

import argparse

from advisor.data.catalog import user_catalog
from advisor.data.importers import ImportedModel, import_model, save_imported_model
from advisor.model.geometry import geometry, kv_bytes_per_token, weight_bits, weight_bytes
from advisor.text.format import json_text, table
from advisor.cli.exit_codes import EXIT_OK

#: formats shown in the text output (all catalog formats are in --json)
SHOWN_FORMATS = ("bf16", "fp8", "q8_0", "q6_k", "q4_k_m", "awq-int4", "mxfp4", "mxfp4-moe-gguf")


def summary(cat, imported: ImportedModel) -> dict:
    """The figures `import-model` prints (and the app can show): spec, KV, weight bytes by format."""
    m = imported.model
    g = geometry(m)
    formats = {}
    quants = dict(cat.quants)
    if imported.quant is not None:
        quants[imported.quant.key] = imported.quant
    for q in quants.values():
        if q.non_expert_bits_per_weight is not None and not m.is_moe:
            continue
        formats[q.key] = round(weight_bytes(g, weight_bits(q)))
    return {
        "key": m.key, "name": m.name, "family": m.family, "source": imported.source, "kind": imported.kind,
        "params_total_b": m.params_total_b, "params_active_b": m.params_active_b, "layers": m.layers,
        "hidden": m.hidden, "heads": m.heads, "kv_heads": m.kv_heads, "head_dim": m.head_dim,
        "attention": m.attention, "experts": m.experts, "experts_per_token": m.experts_per_token,
        "sliding_window": m.sliding_window, "sliding_layers": m.sliding_layers, "linear_layers": m.linear_layers,
        "native_context": m.native_context, "kv_bytes_per_token_f16": kv_bytes_per_token(m, 16),
        "weight_format": imported.weight_format, "weight_bytes_as_stored": imported.weight_bytes,
        "weight_bytes_by_format": formats, "notes": list(imported.notes), "entry": imported.entry,
        "quant_entry": imported.quant_entry,
    }


def cmd_import_model(args: argparse.Namespace) -> int:
    cat = user_catalog()
    imported = import_model(args.source, name=args.name)
    saved = None
    if args.save_import:
        imported, saved = save_imported_model(cat, imported)
    s = summary(cat, imported)
    if saved is not None:
        s["saved_to"] = str(saved)
    if args.json:
        print(json_text(s))
        return EXIT_OK
    m = imported.model
    moe = f", {m.experts} experts ({m.experts_per_token} per token)" if m.is_moe else ""
    print(f"{m.name}  [{m.key}]  from {imported.source}")
    print(f"  parameters   {m.params_total_b:,.3f} B total, {m.params_active_b:,.3f} B active{moe}")
    layers = f"{m.layers} layers"
    if m.sliding_layers:
        layers += f" ({m.sliding_layers} sliding over {m.sliding_window:,} tokens)"
    if m.linear_layers:
        layers += f" ({m.linear_layers} linear-attention)"
    print(f"  layout       {layers}, hidden {m.hidden}, {m.heads} heads / {m.kv_heads} KV x {m.head_dim} "
          f"({m.attention.upper()})")
    print(f"  KV cache     {s['kv_bytes_per_token_f16']:,.0f} bytes per token at 16 bits")
    print(f"  context      {m.native_context:,} tokens")
    stored = f"{imported.weight_bytes / 1e9:,.2f} GB as stored" if imported.weight_bytes else "size not in the source"
    print(f"  weights      format {imported.weight_format or '?'}, {stored}")
    rows = []
    for key in ([imported.quant.key] if imported.quant is not None else []) + list(SHOWN_FORMATS):
        b = s["weight_bytes_by_format"].get(key)
        if b is not None:
            rows.append([key, f"{b / 1e9:,.2f}"])
    print(table(["format", "weights GB"], rows))
    for n in imported.notes:
        print(f"  note: {n}")
    if saved is not None:
        print(f"saved as {imported.model.key!r} to {saved}")
    return EXIT_OK


def register(sub) -> None:
    p = sub.add_parser("import-model", help="size any model: a config.json, a folder, a .gguf file or hf:org/name",
                       description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", help="config.json, a folder holding one, a .gguf file, or hf:org/name")
    p.add_argument("--name", help="the name to give it (default: from the source)")
    p.add_argument("--save", dest="save_import", action="store_true",
                   help="add it to your catalog (imported-models.yaml)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_import_model)
