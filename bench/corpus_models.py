"""The third-party model corpus of bench/torch_corpus.py (issue 32, item 4).

Every entry builds a model from code with random weights (nothing is
downloaded: no pretrained weights, no hub) and small example inputs:
    name -> Spec(name, family, build); build() -> (model, inputs)
Families: torchvision (every classification model of list_models), timm,
torchaudio, transformers.  Every dropout probability is 0 (config fields and
every dropout module), stochastic depth / layer drop / SpecAugment off, so
that the placed model's training step can be compared with the unplaced one.
"""
import collections
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch
import torch.nn as nn

Spec = collections.namedtuple("Spec", "name family build")
MODELS = collections.OrderedDict()

B = 2          # batch
S = 32         # tokens
IMG = 64       # image side where the model allows it
VOCAB = 128


def _add(name, family, build):
    MODELS[name] = Spec(name, family, build)


def no_dropout(model):
    """Every dropout-like module's probability to 0 (nn.Dropout*, torchvision
    StochasticDepth, timm DropPath / DropBlock, anything with a float `p`,
    `drop_prob` or `drop_rate` attribute named like dropout)."""
    for m in model.modules():
        cls = type(m).__name__.lower()
        if isinstance(m, nn.modules.dropout._DropoutNd):
            m.p = 0.0
        elif "drop" in cls or "stochastic" in cls:
            for k in ("p", "drop_prob", "drop_rate", "prob"):
                if isinstance(getattr(m, k, None), float):
                    setattr(m, k, 0.0)
    return model


def images(side=IMG, batch=B, ch=3):
    return (torch.randn(batch, ch, side, side),)


def tokens(n=S, vocab=VOCAB, batch=B):
    return torch.randint(3, vocab, (batch, n))


# ------------------------------------------------------------ torchvision

# input side per model where 64x64 does not work (or the model's default is needed)
TV_SIDE = {"inception_v3": 299, "maxvit_t": 224, "vit_h_14": 56}
TV_KW = {"vit_b_16": {"image_size": 64}, "vit_b_32": {"image_size": 64},
         "vit_l_16": {"image_size": 64}, "vit_l_32": {"image_size": 64},
         "vit_h_14": {"image_size": 56}}


def _tv(name):
    def build():
        import torchvision
        kw = dict(TV_KW.get(name, {}))
        model = torchvision.models.get_model(name, weights=None, num_classes=10, **kw)
        return no_dropout(model), images(TV_SIDE.get(name, IMG))
    return build


def _register_torchvision():
    try:
        import torchvision
        names = torchvision.models.list_models(module=torchvision.models)
    except (ImportError, AttributeError):  # no torchvision, or one before 0.14
        return
    for name in names:
        _add("tv." + name, "torchvision", _tv(name))


# ------------------------------------------------------------------- timm

TIMM = [  # name, input side, create_model kwargs
    ("resnet18", IMG, {}),
    ("resnet50", IMG, {}),
    ("resnext26ts", IMG, {}),
    ("res2net50_14w_8s", IMG, {}),
    ("efficientnet_b0", IMG, {}),
    ("tf_efficientnetv2_b0", IMG, {}),
    ("mobilenetv3_small_100", IMG, {}),
    ("mobilenetv3_large_100", IMG, {}),
    ("mixnet_s", IMG, {}),
    ("ghostnet_100", IMG, {}),
    ("lcnet_050", IMG, {}),
    ("rexnet_100", IMG, {}),
    ("regnetx_002", IMG, {}),
    ("regnety_002", IMG, {}),
    ("densenet121", IMG, {}),
    ("inception_v3", 96, {}),
    ("dla34", IMG, {}),
    ("cspdarknet53", IMG, {}),
    ("dpn68", IMG, {}),
    ("hrnet_w18_small", IMG, {}),
    ("nf_resnet26", IMG, {}),
    ("vgg11", IMG, {}),
    ("convnext_atto", IMG, {}),
    ("vit_tiny_patch16_224", IMG, {"img_size": IMG}),
    ("deit_tiny_patch16_224", IMG, {"img_size": IMG}),
    ("swin_tiny_patch4_window7_224", IMG, {"img_size": IMG, "window_size": 4}),
    ("mixer_s16_224", IMG, {"img_size": IMG}),
    ("cait_xxs24_224", IMG, {"img_size": IMG}),
    ("xcit_nano_12_p16_224", IMG, {"img_size": IMG}),
    ("pit_ti_224", 224, {}),
    ("levit_128s", 224, {}),
    ("mobilevit_xxs", IMG, {}),
    ("poolformer_s12", IMG, {}),
    ("edgenext_xx_small", IMG, {}),
    ("efficientformer_l1", 224, {}),
    ("coat_lite_tiny", IMG, {"img_size": IMG}),
    ("fastvit_t8", IMG, {}),
    ("repvit_m1", IMG, {}),
    ("efficientvit_b0", IMG, {}),
    ("tiny_vit_5m_224", 224, {}),
    ("eva02_tiny_patch14_224", 56, {"img_size": 56}),
]


def _timm(name, side, kw):
    def build():
        import timm
        # drop rates default to 0 in timm (not every model takes drop_path_rate)
        model = timm.create_model(name, pretrained=False, num_classes=10, **kw)
        return no_dropout(model), images(side)
    return build


def _register_timm():
    for name, side, kw in TIMM:
        _add("timm." + name, "timm", _timm(name, side, kw))


# ------------------------------------------------------------- torchaudio

def _ta_wav2vec2():
    import torchaudio
    m = torchaudio.models.wav2vec2_base(encoder_projection_dropout=0.0,
                                        encoder_attention_dropout=0.0,
                                        encoder_ff_interm_dropout=0.0, encoder_dropout=0.0,
                                        encoder_layer_drop=0.0)
    return no_dropout(m), (torch.randn(B, 8000),)


class _WithLengths(nn.Module):
    """model(x, lengths) returning (output, lengths): the output."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x, lengths):
        return self.m(x, lengths)[0]


def _ta_hubert():
    import torchaudio
    m = torchaudio.models.hubert_base(encoder_projection_dropout=0.0,
                                      encoder_attention_dropout=0.0,
                                      encoder_ff_interm_dropout=0.0, encoder_dropout=0.0,
                                      encoder_layer_drop=0.0)
    return no_dropout(_WithLengths(m)), (torch.randn(B, 8000), torch.tensor([8000, 6400]))


def _ta_conformer():
    import torchaudio
    m = torchaudio.models.Conformer(input_dim=80, num_heads=4, ffn_dim=128, num_layers=2,
                                    depthwise_conv_kernel_size=31, dropout=0.0)
    return no_dropout(_WithLengths(m)), (torch.randn(B, S, 80), torch.tensor([S, S - 8]))


def _ta_emformer():
    import torchaudio
    m = torchaudio.models.Emformer(input_dim=64, num_heads=4, ffn_dim=128, num_layers=2,
                                   segment_length=4, right_context_length=1, dropout=0.0)
    return no_dropout(_WithLengths(m)), (torch.randn(B, S + 1, 64), torch.tensor([S, S - 6]))


def _ta_convtasnet():
    import torchaudio
    m = torchaudio.models.ConvTasNet(num_sources=2, enc_kernel_size=16, enc_num_feats=64,
                                     msk_kernel_size=3, msk_num_feats=32,
                                     msk_num_hidden_feats=64, msk_num_layers=2,
                                     msk_num_stacks=2)
    return no_dropout(m), (torch.randn(B, 1, 800),)


def _ta_deepspeech():
    import torchaudio
    m = torchaudio.models.DeepSpeech(n_feature=40, n_hidden=64, n_class=10, dropout=0.0)
    return no_dropout(m), (torch.randn(B, 1, S, 40),)


def _ta_wavernn():
    import torchaudio
    m = torchaudio.models.WaveRNN(upsample_scales=[4, 4], n_classes=16, hop_length=16,
                                  n_res_block=2, n_rnn=32, n_fc=32, kernel_size=5, n_freq=20,
                                  n_hidden=16, n_output=16)
    n_time = 12
    return no_dropout(m), (torch.randn(B, 1, (n_time - 5 + 1) * 16), torch.randn(B, 1, 20, n_time))


def _ta_wav2letter():
    import torchaudio
    m = torchaudio.models.Wav2Letter(num_classes=10, input_type="mfcc", num_features=13)
    return no_dropout(m), (torch.randn(B, 13, 64),)


class _RNNT(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, sources, source_lengths, targets, target_lengths):
        return self.m(sources, source_lengths, targets, target_lengths)[0]


def _ta_emformer_rnnt():
    import torchaudio
    m = torchaudio.models.emformer_rnnt_model(
        input_dim=16, encoding_dim=32, num_symbols=20, segment_length=4,
        right_context_length=1, time_reduction_input_dim=16, time_reduction_stride=2,
        transformer_num_heads=2, transformer_ffn_dim=32, transformer_num_layers=2,
        transformer_dropout=0.0, transformer_activation="gelu", transformer_left_context_length=8,
        transformer_max_memory_size=0, transformer_weight_init_scale_strategy="depthwise",
        transformer_tanh_on_mem=True, symbol_embedding_dim=16, num_lstm_layers=1,
        lstm_layer_norm=True, lstm_layer_norm_epsilon=1e-5, lstm_dropout=0.0)
    src = torch.randn(B, S + 2, 16)
    return no_dropout(_RNNT(m)), (src, torch.tensor([S, S - 4]),
                                  torch.randint(0, 20, (B, 6)), torch.tensor([6, 4]))


def _register_torchaudio():
    for name, fn in [("wav2vec2_base", _ta_wav2vec2), ("hubert_base", _ta_hubert),
                     ("Conformer", _ta_conformer), ("Emformer", _ta_emformer),
                     ("ConvTasNet", _ta_convtasnet), ("DeepSpeech", _ta_deepspeech),
                     ("WaveRNN", _ta_wavernn), ("Wav2Letter", _ta_wav2letter),
                     ("emformer_rnnt", _ta_emformer_rnnt)]:
        _add("ta." + name, "torchaudio", fn)


# ----------------------------------------------------------- transformers

def zero_dropout_config(cfg):
    """Every dropout-like config field to 0 (recursively in sub-configs)."""
    for k, v in list(vars(cfg).items()):
        if hasattr(v, "to_dict") and hasattr(v, "model_type"):
            zero_dropout_config(v)
        elif isinstance(v, (float, int)) and not isinstance(v, bool) and (
                "drop" in k or k in ("mask_time_prob", "mask_feature_prob")):
            setattr(cfg, k, 0.0 if isinstance(v, float) else 0)
    if hasattr(cfg, "apply_spec_augment"):
        cfg.apply_spec_augment = False
    cfg.use_cache = False
    return cfg


class HF(nn.Module):
    """A transformers model called with keyword tensors from positional ones;
    returns the first tensor of its output (logits; no labels are given)."""

    def __init__(self, m, keys):
        super().__init__()
        self.m = m
        self.keys = tuple(keys)

    def forward(self, *args):
        out = self.m(**dict(zip(self.keys, args)), return_dict=True)
        return out[0]  # a ModelOutput's first field that is not None


LM = {  # decoder-only language models: (config class, model class, config kwargs)
    "gpt2": ("GPT2Config", "GPT2LMHeadModel",
             dict(n_layer=2, n_embd=64, n_head=2, n_positions=64)),
    "llama": ("LlamaConfig", "LlamaForCausalLM",
              dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)),
    "mixtral": ("MixtralConfig", "MixtralForCausalLM",
                dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, num_local_experts=4,
                     num_experts_per_tok=2, max_position_embeddings=64)),
    "qwen2_moe": ("Qwen2MoeConfig", "Qwen2MoeForCausalLM",
                  dict(hidden_size=64, intermediate_size=128, moe_intermediate_size=32,
                       shared_expert_intermediate_size=64, num_experts=4, num_experts_per_tok=2,
                       num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                       max_position_embeddings=64)),
    "olmoe": ("OlmoeConfig", "OlmoeForCausalLM",
              dict(hidden_size=64, intermediate_size=32, num_hidden_layers=2,
                   num_attention_heads=2, num_key_value_heads=2, num_experts=4,
                   num_experts_per_tok=2, max_position_embeddings=64)),
    "opt": ("OPTConfig", "OPTForCausalLM",
            dict(hidden_size=64, num_hidden_layers=2, ffn_dim=128, num_attention_heads=2,
                 max_position_embeddings=64, word_embed_proj_dim=64)),
    "gpt_neo": ("GPTNeoConfig", "GPTNeoForCausalLM",
                dict(hidden_size=64, num_layers=2, num_heads=2,
                     attention_types=[[["global", "local"], 1]], max_position_embeddings=64,
                     window_size=16, intermediate_size=128)),
    "gptj": ("GPTJConfig", "GPTJForCausalLM",
             dict(n_embd=64, n_layer=2, n_head=2, rotary_dim=16, n_positions=64)),
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM",
                 dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=128, max_position_embeddings=64)),
    "gpt_bigcode": ("GPTBigCodeConfig", "GPTBigCodeForCausalLM",
                    dict(n_embd=64, n_layer=2, n_head=2, n_positions=64)),
    "codegen": ("CodeGenConfig", "CodeGenForCausalLM",
                dict(n_embd=64, n_layer=2, n_head=4, rotary_dim=8, n_positions=64, n_ctx=64)),
    "bloom": ("BloomConfig", "BloomForCausalLM", dict(hidden_size=64, n_layer=2, n_head=2)),
    "falcon": ("FalconConfig", "FalconForCausalLM",
               dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2)),
    "mistral": ("MistralConfig", "MistralForCausalLM",
                dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                     sliding_window=16)),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM",
              dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM",
              dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                   max_position_embeddings=64)),
    "phi": ("PhiConfig", "PhiForCausalLM",
            dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=2, partial_rotary_factor=0.5, max_position_embeddings=64)),
    "phi3": ("Phi3Config", "Phi3ForCausalLM",
             dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=2, max_position_embeddings=64, pad_token_id=0)),
    "gemma": ("GemmaConfig", "GemmaForCausalLM",
              dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                   num_attention_heads=2, num_key_value_heads=1, head_dim=32,
                   max_position_embeddings=64)),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM",
               dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                    num_attention_heads=2, num_key_value_heads=1, head_dim=32,
                    max_position_embeddings=64, sliding_window=16)),
    "stablelm": ("StableLmConfig", "StableLmForCausalLM",
                 dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=2, max_position_embeddings=64)),
    "xlnet": ("XLNetConfig", "XLNetLMHeadModel", dict(d_model=64, n_layer=2, n_head=2, d_inner=128)),
}

MLM = {  # encoders over token ids (BERT also with an attention mask with padding)
    "bert": ("BertConfig", "BertForMaskedLM",
             dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=128, max_position_embeddings=64)),
    "roberta": ("RobertaConfig", "RobertaForMaskedLM",
                dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=128, max_position_embeddings=64, pad_token_id=1)),
    "distilbert": ("DistilBertConfig", "DistilBertForMaskedLM",
                   dict(dim=64, n_layers=2, n_heads=2, hidden_dim=128,
                        max_position_embeddings=64)),
    "albert": ("AlbertConfig", "AlbertForMaskedLM",
               dict(embedding_size=32, hidden_size=64, num_hidden_layers=2,
                    num_attention_heads=2, intermediate_size=128, max_position_embeddings=64)),
    "electra": ("ElectraConfig", "ElectraForMaskedLM",
                dict(embedding_size=32, hidden_size=64, num_hidden_layers=2,
                     num_attention_heads=2, intermediate_size=128, max_position_embeddings=64)),
    "deberta_v2": ("DebertaV2Config", "DebertaV2ForMaskedLM",
                   dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=128, max_position_embeddings=64,
                        relative_attention=True, pos_att_type=["p2c", "c2p"])),
    "mobilebert": ("MobileBertConfig", "MobileBertForMaskedLM",
                   dict(hidden_size=64, embedding_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, intra_bottleneck_size=32,
                        true_hidden_size=32, max_position_embeddings=64)),
    "funnel": ("FunnelConfig", "FunnelForMaskedLM",
               dict(d_model=64, n_head=2, d_head=32, d_inner=128, block_sizes=[1, 1],
                    num_decoder_layers=1)),
}

SEQ2SEQ = {  # encoder-decoder over token ids: (input_ids, decoder_input_ids)
    "t5": ("T5Config", "T5ForConditionalGeneration",
           dict(d_model=64, d_kv=32, d_ff=128, num_layers=2, num_heads=2,
                decoder_start_token_id=0)),
    "mt5": ("MT5Config", "MT5ForConditionalGeneration",
            dict(d_model=64, d_kv=32, d_ff=128, num_layers=2, num_heads=2,
                 decoder_start_token_id=0)),
    "bart": ("BartConfig", "BartForConditionalGeneration", {}),
    "mbart": ("MBartConfig", "MBartForConditionalGeneration", {}),
    "pegasus": ("PegasusConfig", "PegasusForConditionalGeneration", {}),
    "marian": ("MarianConfig", "MarianMTModel", {}),
}
_ED = dict(d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
           decoder_attention_heads=2, encoder_ffn_dim=128, decoder_ffn_dim=128,
           max_position_embeddings=64, pad_token_id=0, bos_token_id=1, eos_token_id=2,
           decoder_start_token_id=2, forced_eos_token_id=2)

VISION = {  # (config class, model class, config kwargs, image side)
    "vit": ("ViTConfig", "ViTForImageClassification",
            dict(image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2,
                 num_attention_heads=2, intermediate_size=128), 32),
    "deit": ("DeiTConfig", "DeiTForImageClassification",
             dict(image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2,
                  num_attention_heads=2, intermediate_size=128), 32),
    "beit": ("BeitConfig", "BeitForImageClassification",
             dict(image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2,
                  num_attention_heads=2, intermediate_size=128,
                  use_relative_position_bias=True), 32),
    "dinov2": ("Dinov2Config", "Dinov2ForImageClassification",
               dict(image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2,
                    num_attention_heads=2, mlp_ratio=2), 32),
    "swin": ("SwinConfig", "SwinForImageClassification",
             dict(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 2],
                  window_size=4), 32),
    "convnext": ("ConvNextConfig", "ConvNextForImageClassification",
                 dict(num_stages=2, hidden_sizes=[16, 32], depths=[1, 1]), 32),
    "resnet": ("ResNetConfig", "ResNetForImageClassification",
               dict(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1]), 32),
    "segformer": ("SegformerConfig", "SegformerForSemanticSegmentation",
                  dict(num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1],
                       hidden_sizes=[16, 32], num_attention_heads=[1, 2], patch_sizes=[7, 3],
                       strides=[4, 2], mlp_ratios=[2, 2], decoder_hidden_size=32), 64),
}

AUDIO = {  # CTC heads over raw audio
    "wav2vec2": ("Wav2Vec2Config", "Wav2Vec2ForCTC"),
    "hubert": ("HubertConfig", "HubertForCTC"),
}
_AUDIO_KW = dict(vocab_size=32, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=128, conv_dim=(32, 32, 32), conv_stride=(5, 2, 2),
                 conv_kernel=(10, 3, 3), num_conv_pos_embeddings=16,
                 num_conv_pos_embedding_groups=4)


def _cfg(cls_name, **kw):
    import transformers
    cfg = getattr(transformers, cls_name)(**kw)
    return zero_dropout_config(cfg)


def _model(cls_name, cfg):
    import transformers
    torch.manual_seed(0)
    return no_dropout(getattr(transformers, cls_name)(cfg))


def _hf_lm(key):
    c, m, kw = LM[key]

    def build():
        kw2 = dict(vocab_size=VOCAB, **kw)
        model = _model(m, _cfg(c, **kw2))
        return HF(model, ["input_ids"]), (tokens(),)
    return build


def _hf_mlm(key):
    c, m, kw = MLM[key]

    def build():
        model = _model(m, _cfg(c, vocab_size=VOCAB, **kw))
        if key == "bert":  # padding in the second sequence
            mask = torch.ones(B, S, dtype=torch.long)
            mask[1, S - 8:] = 0
            return HF(model, ["input_ids", "attention_mask"]), (tokens(), mask)
        return HF(model, ["input_ids"]), (tokens(),)
    return build


def _hf_seq2seq(key):
    c, m, kw = SEQ2SEQ[key]

    def build():
        kw2 = dict(kw) if kw else dict(_ED)
        model = _model(m, _cfg(c, vocab_size=VOCAB, **kw2))
        return HF(model, ["input_ids", "decoder_input_ids"]), (tokens(), tokens(S // 2))
    return build


def _hf_vision(key):
    c, m, kw, side = VISION[key]

    def build():
        model = _model(m, _cfg(c, num_labels=10, **kw))
        return HF(model, ["pixel_values"]), images(side)
    return build


def _hf_audio(key):
    c, m = AUDIO[key]

    def build():
        model = _model(m, _cfg(c, **_AUDIO_KW))
        return HF(model, ["input_values"]), (torch.randn(B, 1600),)
    return build


def _hf_whisper():
    model = _model("WhisperForConditionalGeneration", _cfg(
        "WhisperConfig", vocab_size=VOCAB, d_model=64, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=128,
        decoder_ffn_dim=128, num_mel_bins=16, max_source_positions=32, max_target_positions=32,
        pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
        suppress_tokens=None, begin_suppress_tokens=None))
    return (HF(model, ["input_features", "decoder_input_ids"]),
            (torch.randn(B, 16, 64), tokens(8)))


def _hf_clip():
    model = _model("CLIPModel", _cfg(
        "CLIPConfig", projection_dim=32,
        text_config=dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128,
                         num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=32),
        vision_config=dict(image_size=32, patch_size=8, hidden_size=64, intermediate_size=128,
                           num_hidden_layers=2, num_attention_heads=2)))
    return HF(model, ["input_ids", "pixel_values"]), (tokens(16), images(32)[0])


def _register_transformers():
    for k in LM:
        _add("hf." + k, "transformers", _hf_lm(k))
    for k in MLM:
        _add("hf." + k, "transformers", _hf_mlm(k))
    for k in SEQ2SEQ:
        _add("hf." + k, "transformers", _hf_seq2seq(k))
    for k in VISION:
        _add("hf." + k, "transformers", _hf_vision(k))
    for k in AUDIO:
        _add("hf." + k, "transformers", _hf_audio(k))
    _add("hf.whisper", "transformers", _hf_whisper)
    _add("hf.clip", "transformers", _hf_clip)


_register_torchvision()
_register_timm()
_register_torchaudio()
_register_transformers()

FAMILIES = ("torchvision", "timm", "torchaudio", "transformers")
LIBRARY = {"torchvision": "torchvision", "timm": "timm", "torchaudio": "torchaudio",
           "transformers": "transformers"}


def available(family):
    """Whether the family's library imports."""
    try:
        __import__(LIBRARY[family])
        return True
    except ImportError:
        return False


def select(filters):
    """Specs whose family or name matches one of the comma-separated filters
    (a family name, an exact model name, or a substring of the name)."""
    if not filters:
        return list(MODELS.values())
    out = []
    for f in filters.split(","):
        f = f.strip()
        for s in MODELS.values():
            if (s.family == f or s.name == f or f in s.name) and s not in out:
                out.append(s)
    return out
