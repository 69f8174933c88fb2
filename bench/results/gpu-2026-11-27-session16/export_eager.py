# Session 16: small BERT and GPT-2 (random weights) exported with Hugging Face's eager attention, the pattern ONNX
# Runtime's transformer optimizer fuses into com.microsoft Attention / MultiHeadAttention / EmbedLayerNormalization.
import sys, torch
from transformers import BertConfig, BertModel, GPT2Config, GPT2Model
out = sys.argv[1]
torch.manual_seed(0)
cfg = BertConfig(hidden_size=256, num_hidden_layers=2, num_attention_heads=4, intermediate_size=512)
cfg._attn_implementation = "eager"
class Bert(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.m = BertModel(cfg, add_pooling_layer=False)
    def forward(self, input_ids, attention_mask, token_type_ids):
        return self.m(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state
bert = Bert().eval()
ids = torch.randint(0, 30000, (2, 64))
mask = torch.ones(2, 64, dtype=torch.int64)
mask[1, 40:] = 0
seg = torch.zeros(2, 64, dtype=torch.int64)
torch.onnx.export(bert, (ids, mask, seg), f"{out}/bert_eager.onnx", input_names=["input_ids", "attention_mask", "token_type_ids"],
                  output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                  dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
                                "token_type_ids": {0: "batch", 1: "seq"}})
gcfg = GPT2Config(n_embd=256, n_layer=2, n_head=4)
gcfg._attn_implementation = "eager"
class Gpt(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.m = GPT2Model(gcfg)
    def forward(self, input_ids):
        return self.m(input_ids=input_ids, use_cache=False).last_hidden_state
gpt = Gpt().eval()
tok = torch.randint(0, 50000, (1, 8))
torch.onnx.export(gpt, (tok,), f"{out}/gpt2_eager.onnx", input_names=["input_ids"], output_names=["last_hidden_state"],
                  opset_version=17, dynamo=False)
print("exported")
