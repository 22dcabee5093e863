"""docs/examples/llama-3.1-no-rope-freqs.gguf: the real Llama 3.1 conversion of tests/data/llamacpp/llama31.gguf
without its rope_freqs tensor, as converters before llama.cpp PR #8676 wrote Llama 3.1 (every key kept).

    python tools/golden/llamacpp_docs_example.py   (needs the gguf package)
"""

import gguf
import numpy as np

r = gguf.GGUFReader("tests/data/llamacpp/llama31.gguf")
w = gguf.GGUFWriter("docs/examples/llama-3.1-no-rope-freqs.gguf", r.fields["general.architecture"].contents())
for key, f in r.fields.items():
    if key.startswith("GGUF.") or key == "general.architecture":
        continue
    if f.types[0] == gguf.GGUFValueType.ARRAY:
        w.add_key_value(key, f.contents(), f.types[0], sub_type=f.types[-1])
    else:
        w.add_key_value(key, f.contents(), f.types[0])
for t in r.tensors:
    if t.name != "rope_freqs.weight":
        w.add_tensor(t.name, np.asarray(t.data))
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
