#!/usr/bin/env python3
"""Writes the HLO that PyTorch/XLA hands to XLA for one BERT training step (forward, backward,
SGD update), on XLA:CPU, for tools/make_big_module.py --shape pytorch-bert.

  python3 -m venv .venv-torchxla
  .venv-torchxla/bin/pip install torch==2.9.0 torch-xla==2.9.0 transformers==5.24.0
  PJRT_DEVICE=CPU XLA_FLAGS="--xla_dump_to=/tmp/ptxla_dump --xla_dump_hlo_as_text" \
      .venv-torchxla/bin/python testdata/bench/gen_pytorch_bert.py

The model is transformers' BertForMaskedLM built from a BertConfig (random weights: nothing is
downloaded), BERT-base's structure scaled down. Deterministic: fixed seeds, fixed inputs.
"""

import torch
import torch_xla
from transformers import BertConfig, BertForMaskedLM


def main():
    torch.manual_seed(0)
    config = BertConfig(vocab_size=8192, hidden_size=256, num_hidden_layers=4,
                        num_attention_heads=4, intermediate_size=1024,
                        max_position_embeddings=128, attn_implementation="eager")
    device = torch_xla.device()
    model = BertForMaskedLM(config).to(device)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    batch, seq = 8, 128
    gen = torch.Generator().manual_seed(1)
    input_ids = torch.randint(0, config.vocab_size, (batch, seq), generator=gen).to(device)
    labels = torch.randint(0, config.vocab_size, (batch, seq), generator=gen).to(device)
    attention_mask = torch.ones(batch, seq, dtype=torch.long).to(device)
    # Materialize the parameters and inputs first, so the step's graph has them as parameters.
    torch_xla.sync()
    optimizer.zero_grad()
    out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    out.loss.backward()
    optimizer.step()
    torch_xla.sync()
    print("loss", out.loss.item())


if __name__ == "__main__":
    main()
