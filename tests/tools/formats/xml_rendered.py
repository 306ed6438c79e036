"""What the vendored chat templates render for an assistant turn, byte for byte, and the calls
behind each render.

Rendered as ``transformers.apply_chat_template`` renders (jinja2's ImmutableSandboxedEnvironment,
``trim_blocks``, ``lstrip_blocks``, ``loopcontrols``, the ``generation`` tag, ``tojson``), with
:data:`TOOLS`, a system and a user message, then an assistant message whose ``tool_calls`` hold
the case's calls (arguments as dicts; as JSON text for Functionary v3.2, whose template needs
it), ``reasoning_content`` ``"THINK"`` (case ``reasoning``, where the template renders it, and
every case of templates whose prompt opens the channel) and content ``"Let me check."`` (case
``prose``). Each entry is ``(the end of the generation prompt, the turn)``: the turn is what the
conversation continues the generation prompt with, cut before the template's end-of-turn marker
(the stop token). Keys: ``(template file under tests/data/templates, case)``.
"""

from __future__ import annotations

from typing import Any

#: the tools of every render (OpenAI format)
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "set_opts",
            "description": "Options.",
            "parameters": {
                "type": "object",
                "properties": {
                    "flag": {"type": "boolean"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "cfg": {
                        "type": "object",
                        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                    },
                    "ratio": {"type": "number"},
                },
            },
        },
    },
]

_ONE = ("get_weather", {"city": "Paris", "days": 3})
#: the calls of each case
CALLS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "one": [_ONE],
    "two": [_ONE, ("get_weather", {"city": "Rome"})],
    "types": [
        (
            "set_opts",
            {"flag": True, "tags": ["a", "b c"], "cfg": {"a": 1, "b": "x y"}, "ratio": 0.5},
        )
    ],
    "reasoning": [_ONE],
    "prose": [_ONE],
}

#: template file -> the format that reads it
FORMAT_OF: dict[str, str] = {
    "llama.cpp/ByteDance-Seed-OSS.jinja": "seed_oss",
    "llama.cpp/MiniMax-M2.jinja": "minimax_m2",
    "llama.cpp/openbmb-MiniCPM5-1B.jinja": "minicpm5",
    "llama.cpp/muse-glimmer.jinja": "muse_glimmer",
    "vllm/tool_chat_template_muse_glimmer.jinja": "muse_glimmer",
    "llama.cpp/tencent-Hy3.jinja": "hy3",
    "llama.cpp/inclusionai-ling-3.0-flash.jinja": "ling",
    "llama.cpp/Spark2.5.jinja": "spark",
    "llama.cpp/LFM2.5-8B-A1B.jinja": "lfm2",
    "vllm-upstream/tool_chat_template_olmo3.jinja": "olmo3",
    "vllm-upstream/tool_chat_template_minicpm3.jinja": "minicpm3",
    "llama.cpp/MiniMax-M3.jinja": "minimax_m3",
    "llama.cpp-upstream/GigaChat3.5.jinja": "gigachat35",
    "llama.cpp/meetkai-functionary-medium-v3.2.jinja": "functionary_v32",
}

RENDERED: dict[tuple[str, str], tuple[str, str]] = {
    ("llama.cpp/ByteDance-Seed-OSS.jinja", "one"): (
        "\n<seed:eos><seed:bos>user\nUSER<seed:eos><seed:bos>assistant\n",
        (
            "<seed:tool_call>\n"
            "<function=get_weather>\n"
            "<parameter=city>Paris</parameter>\n"
            "<parameter=days>3</parameter>\n"
            "</function>\n"
            "</seed:tool_call>"
        ),
    ),
    ("llama.cpp/ByteDance-Seed-OSS.jinja", "two"): (
        "\n<seed:eos><seed:bos>user\nUSER<seed:eos><seed:bos>assistant\n",
        (
            "<seed:tool_call>\n"
            "<function=get_weather>\n"
            "<parameter=city>Paris</parameter>\n"
            "<parameter=days>3</parameter>\n"
            "</function>\n"
            "</seed:tool_call>\n"
            "<seed:tool_call>\n"
            "<function=get_weather>\n"
            "<parameter=city>Rome</parameter>\n"
            "</function>\n"
            "</seed:tool_call>"
        ),
    ),
    ("llama.cpp/ByteDance-Seed-OSS.jinja", "types"): (
        "\n<seed:eos><seed:bos>user\nUSER<seed:eos><seed:bos>assistant\n",
        (
            "<seed:tool_call>\n"
            "<function=set_opts>\n"
            "<parameter=flag>True</parameter>\n"
            "<parameter=tags>['a', 'b c']</parameter>\n"
            "<parameter=cfg>{'a': 1, 'b': 'x y'}</parameter>\n"
            "<parameter=ratio>0.5</parameter>\n"
            "</function>\n"
            "</seed:tool_call>"
        ),
    ),
    ("llama.cpp/ByteDance-Seed-OSS.jinja", "reasoning"): (
        "\n<seed:eos><seed:bos>user\nUSER<seed:eos><seed:bos>assistant\n",
        (
            "<seed:think>THINK</seed:think>\n"
            "<seed:tool_call>\n"
            "<function=get_weather>\n"
            "<parameter=city>Paris</parameter>\n"
            "<parameter=days>3</parameter>\n"
            "</function>\n"
            "</seed:tool_call>"
        ),
    ),
    ("llama.cpp/ByteDance-Seed-OSS.jinja", "prose"): (
        "\n<seed:eos><seed:bos>user\nUSER<seed:eos><seed:bos>assistant\n",
        (
            "Let me check.\n"
            "\n"
            "<seed:tool_call>\n"
            "<function=get_weather>\n"
            "<parameter=city>Paris</parameter>\n"
            "<parameter=days>3</parameter>\n"
            "</function>\n"
            "</seed:tool_call>"
        ),
    ),
    ("llama.cpp/MiniMax-M2.jinja", "one"): (
        ">\n</minimax:tool_call>[e~[\n]~b]user\nUSER[e~[\n]~b]ai\n<think>\n",
        (
            "THINK\n"
            "</think>\n"
            "\n"
            "\n"
            "<minimax:tool_call>\n"
            '<invoke name="get_weather">\n'
            '<parameter name="city">Paris</parameter>\n'
            '<parameter name="days">3</parameter>\n'
            "</invoke>\n"
            "</minimax:tool_call>"
        ),
    ),
    ("llama.cpp/MiniMax-M2.jinja", "two"): (
        ">\n</minimax:tool_call>[e~[\n]~b]user\nUSER[e~[\n]~b]ai\n<think>\n",
        (
            "THINK\n"
            "</think>\n"
            "\n"
            "\n"
            "<minimax:tool_call>\n"
            '<invoke name="get_weather">\n'
            '<parameter name="city">Paris</parameter>\n'
            '<parameter name="days">3</parameter>\n'
            "</invoke>\n"
            '<invoke name="get_weather">\n'
            '<parameter name="city">Rome</parameter>\n'
            "</invoke>\n"
            "</minimax:tool_call>"
        ),
    ),
    ("llama.cpp/MiniMax-M2.jinja", "types"): (
        ">\n</minimax:tool_call>[e~[\n]~b]user\nUSER[e~[\n]~b]ai\n<think>\n",
        (
            "THINK\n"
            "</think>\n"
            "\n"
            "\n"
            "<minimax:tool_call>\n"
            '<invoke name="set_opts">\n'
            '<parameter name="flag">true</parameter>\n'
            '<parameter name="tags">["a", "b c"]</parameter>\n'
            '<parameter name="cfg">{"a": 1, "b": "x y"}</parameter>\n'
            '<parameter name="ratio">0.5</parameter>\n'
            "</invoke>\n"
            "</minimax:tool_call>"
        ),
    ),
    ("llama.cpp/MiniMax-M2.jinja", "prose"): (
        ">\n</minimax:tool_call>[e~[\n]~b]user\nUSER[e~[\n]~b]ai\n<think>\n",
        (
            "THINK\n"
            "</think>\n"
            "\n"
            "Let me check.\n"
            "<minimax:tool_call>\n"
            '<invoke name="get_weather">\n'
            '<parameter name="city">Paris</parameter>\n'
            '<parameter name="days">3</parameter>\n'
            "</invoke>\n"
            "</minimax:tool_call>"
        ),
    ),
    ("llama.cpp/openbmb-MiniCPM5-1B.jinja", "one"): (
        "end|>\n<|im_start|>user\nUSER<|im_end|>\n<|im_start|>assistant\n",
        (
            '<function name="get_weather"><param name="city">Paris</param><param na'
            'me="days">3</param></function>'
        ),
    ),
    ("llama.cpp/openbmb-MiniCPM5-1B.jinja", "two"): (
        "end|>\n<|im_start|>user\nUSER<|im_end|>\n<|im_start|>assistant\n",
        (
            '<function name="get_weather"><param name="city">Paris</param><param na'
            'me="days">3</param></function>\n'
            '<function name="get_weather"><param name="city">Rome</param></function>'
        ),
    ),
    ("llama.cpp/openbmb-MiniCPM5-1B.jinja", "types"): (
        "end|>\n<|im_start|>user\nUSER<|im_end|>\n<|im_start|>assistant\n",
        (
            '<function name="set_opts"><param name="flag">True</param><param name="'
            "tags\">['a', 'b c']</param><param name=\"cfg\">{'a': 1, 'b': 'x y'}</para"
            'm><param name="ratio">0.5</param></function>'
        ),
    ),
    ("llama.cpp/openbmb-MiniCPM5-1B.jinja", "reasoning"): (
        "end|>\n<|im_start|>user\nUSER<|im_end|>\n<|im_start|>assistant\n",
        (
            "<think>\n"
            "THINK\n"
            "</think>\n"
            "\n"
            '<function name="get_weather"><param name="city">Paris</param><param na'
            'me="days">3</param></function>'
        ),
    ),
    ("llama.cpp/openbmb-MiniCPM5-1B.jinja", "prose"): (
        "end|>\n<|im_start|>user\nUSER<|im_end|>\n<|im_start|>assistant\n",
        (
            "Let me check.\n"
            '<function name="get_weather"><param name="city">Paris</param><param na'
            'me="days">3</param></function>'
        ),
    ),
    ("llama.cpp/muse-glimmer.jinja", "one"): (
        "<|eot|><|start|>user<|message|>USER<|eot|><|start|>assistant",
        (
            " to=get_weather<|message|><atem:function_calls>\n"
            '<atem:invoke name="get_weather">\n'
            '<atem:parameter name="city">Paris</atem:parameter>\n'
            '<atem:parameter name="days">3</atem:parameter>\n'
            "</atem:invoke>\n"
            "</atem:function_calls>"
        ),
    ),
    ("llama.cpp/muse-glimmer.jinja", "two"): (
        "<|eot|><|start|>user<|message|>USER<|eot|><|start|>assistant",
        (
            " to=get_weather<|message|><atem:function_calls>\n"
            '<atem:invoke name="get_weather">\n'
            '<atem:parameter name="city">Paris</atem:parameter>\n'
            '<atem:parameter name="days">3</atem:parameter>\n'
            "</atem:invoke>\n"
            "</atem:function_calls><|eom|><|start|>assistant to=get_weather<|messag"
            "e|><atem:function_calls>\n"
            '<atem:invoke name="get_weather">\n'
            '<atem:parameter name="city">Rome</atem:parameter>\n'
            "</atem:invoke>\n"
            "</atem:function_calls>"
        ),
    ),
    ("llama.cpp/muse-glimmer.jinja", "types"): (
        "<|eot|><|start|>user<|message|>USER<|eot|><|start|>assistant",
        (
            " to=set_opts<|message|><atem:function_calls>\n"
            '<atem:invoke name="set_opts">\n'
            '<atem:parameter name="flag">true</atem:parameter>\n'
            '<atem:parameter name="tags">["a", "b c"]</atem:parameter>\n'
            '<atem:parameter name="cfg">{"a": 1, "b": "x y"}</atem:parameter>\n'
            '<atem:parameter name="ratio">0.5</atem:parameter>\n'
            "</atem:invoke>\n"
            "</atem:function_calls>"
        ),
    ),
    ("llama.cpp/muse-glimmer.jinja", "reasoning"): (
        "<|eot|><|start|>user<|message|>USER<|eot|><|start|>assistant",
        (
            " to=self<|message|>THINK<|eom|><|start|>assistant to=get_weather<|mess"
            "age|><atem:function_calls>\n"
            '<atem:invoke name="get_weather">\n'
            '<atem:parameter name="city">Paris</atem:parameter>\n'
            '<atem:parameter name="days">3</atem:parameter>\n'
            "</atem:invoke>\n"
            "</atem:function_calls>"
        ),
    ),
    ("vllm/tool_chat_template_muse_glimmer.jinja", "one"): (
        "<|eot|><|start|>user<|message|>USER<|eot|><|start|>assistant",
        (
            " to=get_weather<|message|><atem:function_calls>\n"
            '<atem:invoke name="get_weather">\n'
            '<atem:parameter name="city">Paris</atem:parameter>\n'
            '<atem:parameter name="days">3</atem:parameter>\n'
            "</atem:invoke>\n"
            "</atem:function_calls>"
        ),
    ),
    ("vllm/tool_chat_template_muse_glimmer.jinja", "two"): (
        "<|eot|><|start|>user<|message|>USER<|eot|><|start|>assistant",
        (
            " to=get_weather<|message|><atem:function_calls>\n"
            '<atem:invoke name="get_weather">\n'
            '<atem:parameter name="city">Paris</atem:parameter>\n'
            '<atem:parameter name="days">3</atem:parameter>\n'
            "</atem:invoke>\n"
            "</atem:function_calls><|eom|><|start|>assistant to=get_weather<|messag"
            "e|><atem:function_calls>\n"
            '<atem:invoke name="get_weather">\n'
            '<atem:parameter name="city">Rome</atem:parameter>\n'
            "</atem:invoke>\n"
            "</atem:function_calls>"
        ),
    ),
    ("vllm/tool_chat_template_muse_glimmer.jinja", "types"): (
        "<|eot|><|start|>user<|message|>USER<|eot|><|start|>assistant",
        (
            " to=set_opts<|message|><atem:function_calls>\n"
            '<atem:invoke name="set_opts">\n'
            '<atem:parameter name="flag">true</atem:parameter>\n'
            '<atem:parameter name="tags">["a", "b c"]</atem:parameter>\n'
            '<atem:parameter name="cfg">{"a": 1, "b": "x y"}</atem:parameter>\n'
            '<atem:parameter name="ratio">0.5</atem:parameter>\n'
            "</atem:invoke>\n"
            "</atem:function_calls>"
        ),
    ),
    ("vllm/tool_chat_template_muse_glimmer.jinja", "reasoning"): (
        "<|eot|><|start|>user<|message|>USER<|eot|><|start|>assistant",
        (
            " to=self<|message|>THINK<|eom|><|start|>assistant to=get_weather<|mess"
            "age|><atem:function_calls>\n"
            '<atem:invoke name="get_weather">\n'
            '<atem:parameter name="city">Paris</atem:parameter>\n'
            '<atem:parameter name="days">3</atem:parameter>\n'
            "</atem:invoke>\n"
            "</atem:function_calls>"
        ),
    ),
    ("llama.cpp/tencent-Hy3.jinja", "one"): (
        "_Assistant:opensource｜><think:opensource></think:opensource>",
        (
            "<tool_calls:opensource>\n"
            "<tool_call:opensource>get_weather<tool_sep:opensource>\n"
            "<arg_key:opensource>city</arg_key:opensource>\n"
            "<arg_value:opensource>Paris</arg_value:opensource>\n"
            "<arg_key:opensource>days</arg_key:opensource>\n"
            "<arg_value:opensource>3</arg_value:opensource>\n"
            "</tool_call:opensource>\n"
            "</tool_calls:opensource>"
        ),
    ),
    ("llama.cpp/tencent-Hy3.jinja", "two"): (
        "_Assistant:opensource｜><think:opensource></think:opensource>",
        (
            "<tool_calls:opensource>\n"
            "<tool_call:opensource>get_weather<tool_sep:opensource>\n"
            "<arg_key:opensource>city</arg_key:opensource>\n"
            "<arg_value:opensource>Paris</arg_value:opensource>\n"
            "<arg_key:opensource>days</arg_key:opensource>\n"
            "<arg_value:opensource>3</arg_value:opensource>\n"
            "</tool_call:opensource>\n"
            "<tool_call:opensource>get_weather<tool_sep:opensource>\n"
            "<arg_key:opensource>city</arg_key:opensource>\n"
            "<arg_value:opensource>Rome</arg_value:opensource>\n"
            "</tool_call:opensource>\n"
            "</tool_calls:opensource>"
        ),
    ),
    ("llama.cpp/tencent-Hy3.jinja", "types"): (
        "_Assistant:opensource｜><think:opensource></think:opensource>",
        (
            "<tool_calls:opensource>\n"
            "<tool_call:opensource>set_opts<tool_sep:opensource>\n"
            "<arg_key:opensource>flag</arg_key:opensource>\n"
            "<arg_value:opensource>true</arg_value:opensource>\n"
            "<arg_key:opensource>tags</arg_key:opensource>\n"
            '<arg_value:opensource>["a", "b c"]</arg_value:opensource>\n'
            "<arg_key:opensource>cfg</arg_key:opensource>\n"
            '<arg_value:opensource>{"a": 1, "b": "x y"}</arg_value:opensource>\n'
            "<arg_key:opensource>ratio</arg_key:opensource>\n"
            "<arg_value:opensource>0.5</arg_value:opensource>\n"
            "</tool_call:opensource>\n"
            "</tool_calls:opensource>"
        ),
    ),
    ("llama.cpp/tencent-Hy3.jinja", "reasoning"): (
        "pensource｜>USER<｜hy_Assistant:opensource｜><think:opensource>",
        (
            "THINK</think:opensource><tool_calls:opensource>\n"
            "<tool_call:opensource>get_weather<tool_sep:opensource>\n"
            "<arg_key:opensource>city</arg_key:opensource>\n"
            "<arg_value:opensource>Paris</arg_value:opensource>\n"
            "<arg_key:opensource>days</arg_key:opensource>\n"
            "<arg_value:opensource>3</arg_value:opensource>\n"
            "</tool_call:opensource>\n"
            "</tool_calls:opensource>"
        ),
    ),
    ("llama.cpp/tencent-Hy3.jinja", "prose"): (
        "_Assistant:opensource｜><think:opensource></think:opensource>",
        (
            "Let me check.<tool_calls:opensource>\n"
            "<tool_call:opensource>get_weather<tool_sep:opensource>\n"
            "<arg_key:opensource>city</arg_key:opensource>\n"
            "<arg_value:opensource>Paris</arg_value:opensource>\n"
            "<arg_key:opensource>days</arg_key:opensource>\n"
            "<arg_value:opensource>3</arg_value:opensource>\n"
            "</tool_call:opensource>\n"
            "</tool_calls:opensource>"
        ),
    ),
    ("llama.cpp/inclusionai-ling-3.0-flash.jinja", "one"): (
        "e>HUMAN</role>USER<|role_end|><role>ASSISTANT</role>\n<think>",
        (
            "</think><tool_call>get_weather\n"
            "<arg_key>city</arg_key>\n"
            "<arg_value>Paris</arg_value><arg_key>days</arg_key>\n"
            "<arg_value>3</arg_value>\n"
            "</tool_call>"
        ),
    ),
    ("llama.cpp/inclusionai-ling-3.0-flash.jinja", "two"): (
        "e>HUMAN</role>USER<|role_end|><role>ASSISTANT</role>\n<think>",
        (
            "</think><tool_call>get_weather\n"
            "<arg_key>city</arg_key>\n"
            "<arg_value>Paris</arg_value><arg_key>days</arg_key>\n"
            "<arg_value>3</arg_value>\n"
            "</tool_call>\n"
            "<tool_call>get_weather\n"
            "<arg_key>city</arg_key>\n"
            "<arg_value>Rome</arg_value>\n"
            "</tool_call>"
        ),
    ),
    ("llama.cpp/inclusionai-ling-3.0-flash.jinja", "types"): (
        "e>HUMAN</role>USER<|role_end|><role>ASSISTANT</role>\n<think>",
        (
            "</think><tool_call>set_opts\n"
            "<arg_key>flag</arg_key>\n"
            "<arg_value>true</arg_value><arg_key>tags</arg_key>\n"
            '<arg_value>["a", "b c"]</arg_value><arg_key>cfg</arg_key>\n'
            '<arg_value>{"a": 1, "b": "x y"}</arg_value><arg_key>ratio</arg_key>\n'
            "<arg_value>0.5</arg_value>\n"
            "</tool_call>"
        ),
    ),
    ("llama.cpp/inclusionai-ling-3.0-flash.jinja", "reasoning"): (
        "e>HUMAN</role>USER<|role_end|><role>ASSISTANT</role>\n<think>",
        (
            "THINK</think><tool_call>get_weather\n"
            "<arg_key>city</arg_key>\n"
            "<arg_value>Paris</arg_value><arg_key>days</arg_key>\n"
            "<arg_value>3</arg_value>\n"
            "</tool_call>"
        ),
    ),
    ("llama.cpp/inclusionai-ling-3.0-flash.jinja", "prose"): (
        "e>HUMAN</role>USER<|role_end|><role>ASSISTANT</role>\n<think>",
        (
            "</think>Let me check.\n"
            "<tool_call>get_weather\n"
            "<arg_key>city</arg_key>\n"
            "<arg_value>Paris</arg_value><arg_key>days</arg_key>\n"
            "<arg_value>3</arg_value>\n"
            "</tool_call>"
        ),
    ),
    ("llama.cpp/Spark2.5.jinja", "one"): (
        "|>USER<｜end▁of▁sentence｜><｜start▁of▁sentence｜><|Bot|><think>",
        (
            "THINK</think><tool_call>get_weather<arg_key>city</arg_key><arg_value>P"
            "aris</arg_value><arg_key>days</arg_key><arg_value>3</arg_value></tool_call>"
        ),
    ),
    ("llama.cpp/Spark2.5.jinja", "two"): (
        "|>USER<｜end▁of▁sentence｜><｜start▁of▁sentence｜><|Bot|><think>",
        (
            "THINK</think><tool_call>get_weather<arg_key>city</arg_key><arg_value>P"
            "aris</arg_value><arg_key>days</arg_key><arg_value>3</arg_value></tool_"
            "call><tool_call>get_weather<arg_key>city</arg_key><arg_value>Rome</arg"
            "_value></tool_call>"
        ),
    ),
    ("llama.cpp/Spark2.5.jinja", "types"): (
        "|>USER<｜end▁of▁sentence｜><｜start▁of▁sentence｜><|Bot|><think>",
        (
            "THINK</think><tool_call>set_opts<arg_key>flag</arg_key><arg_value>true"
            '</arg_value><arg_key>tags</arg_key><arg_value>["a", "b c"]</arg_value>'
            '<arg_key>cfg</arg_key><arg_value>{"a": 1, "b": "x y"}</arg_value><arg_'
            "key>ratio</arg_key><arg_value>0.5</arg_value></tool_call>"
        ),
    ),
    ("llama.cpp/Spark2.5.jinja", "prose"): (
        "|>USER<｜end▁of▁sentence｜><｜start▁of▁sentence｜><|Bot|><think>",
        (
            "THINK</think>Let me check.<tool_call>get_weather<arg_key>city</arg_key"
            "><arg_value>Paris</arg_value><arg_key>days</arg_key><arg_value>3</arg_"
            "value></tool_call>"
        ),
    ),
    ("llama.cpp/LFM2.5-8B-A1B.jinja", "one"): (
        "end|>\n<|im_start|>user\nUSER<|im_end|>\n<|im_start|>assistant\n",
        "<|tool_call_start|>[get_weather(city='Paris', days=3)]<|tool_call_end|>",
    ),
    ("llama.cpp/LFM2.5-8B-A1B.jinja", "two"): (
        "end|>\n<|im_start|>user\nUSER<|im_end|>\n<|im_start|>assistant\n",
        (
            "<|tool_call_start|>[get_weather(city='Paris', days=3), get_weather(cit"
            "y='Rome')]<|tool_call_end|>"
        ),
    ),
    ("llama.cpp/LFM2.5-8B-A1B.jinja", "types"): (
        "end|>\n<|im_start|>user\nUSER<|im_end|>\n<|im_start|>assistant\n",
        (
            "<|tool_call_start|>[set_opts(flag=True, tags=['a', 'b c'], cfg={\"a\": 1"
            ', "b": "x y"}, ratio=0.5)]<|tool_call_end|>'
        ),
    ),
    ("llama.cpp/LFM2.5-8B-A1B.jinja", "reasoning"): (
        "end|>\n<|im_start|>user\nUSER<|im_end|>\n<|im_start|>assistant\n",
        (
            "<think>THINK</think><|tool_call_start|>[get_weather(city='Paris', days"
            "=3)]<|tool_call_end|>"
        ),
    ),
    ("llama.cpp/LFM2.5-8B-A1B.jinja", "prose"): (
        "end|>\n<|im_start|>user\nUSER<|im_end|>\n<|im_start|>assistant\n",
        ("Let me check.<|tool_call_start|>[get_weather(city='Paris', days=3)]<|tool_call_end|>"),
    ),
    # OLMo 3 renders neither reasoning nor the content of a message with calls
    ("vllm-upstream/tool_chat_template_olmo3.jinja", "one"): (
        "<|im_end|>\n<|im_start|>assistant\n",
        "<function_calls>\nget_weather(city='Paris', days=3)\n</function_calls>",
    ),
    ("vllm-upstream/tool_chat_template_olmo3.jinja", "two"): (
        "<|im_end|>\n<|im_start|>assistant\n",
        (
            "<function_calls>\nget_weather(city='Paris', days=3)\n"
            "get_weather(city='Rome')\n</function_calls>"
        ),
    ),
    ("vllm-upstream/tool_chat_template_olmo3.jinja", "types"): (
        "<|im_end|>\n<|im_start|>assistant\n",
        (
            '<function_calls>\nset_opts(flag=true, tags=["a", "b c"], '
            'cfg={"a": 1, "b": "x y"}, ratio=0.5)\n</function_calls>'
        ),
    ),
    # MiniCPM3 renders a message's ``thought``, not its reasoning_content, and its content after
    # the calls
    ("vllm-upstream/tool_chat_template_minicpm3.jinja", "one"): (
        "<|im_end|>\n<|im_start|>assistant\n",
        (
            '<|tool_call_start|>\n```python\nget_weather(city="Paris",days=3)\n```\n'
            "<|tool_call_end|>\n"
        ),
    ),
    ("vllm-upstream/tool_chat_template_minicpm3.jinja", "two"): (
        "<|im_end|>\n<|im_start|>assistant\n",
        (
            '<|tool_call_start|>\n```python\nget_weather(city="Paris",days=3)\n'
            'get_weather(city="Rome")\n```\n<|tool_call_end|>\n'
        ),
    ),
    ("vllm-upstream/tool_chat_template_minicpm3.jinja", "types"): (
        "<|im_end|>\n<|im_start|>assistant\n",
        (
            '<|tool_call_start|>\n```python\nset_opts(flag=true,tags=["a", "b c"],'
            'cfg={"a": 1, "b": "x y"},ratio=0.5)\n```\n<|tool_call_end|>\n'
        ),
    ),
    ("llama.cpp/MiniMax-M3.jinja", "one"): (
        "oke>\n]<]minimax[>[</tool_call>[e~[\n]~b]user\nUSER[e~[\n]~b]ai\n",
        (
            "</mm:think>]<]minimax[>[<tool_call>\n"
            ']<]minimax[>[<invoke name="get_weather">]<]minimax[>[<city>Paris]<]min'
            "imax[>[</city>]<]minimax[>[<days>3]<]minimax[>[</days>]<]minimax[>[</invoke>\n"
            "]<]minimax[>[</tool_call>"
        ),
    ),
    ("llama.cpp/MiniMax-M3.jinja", "two"): (
        "oke>\n]<]minimax[>[</tool_call>[e~[\n]~b]user\nUSER[e~[\n]~b]ai\n",
        (
            "</mm:think>]<]minimax[>[<tool_call>\n"
            ']<]minimax[>[<invoke name="get_weather">]<]minimax[>[<city>Paris]<]min'
            "imax[>[</city>]<]minimax[>[<days>3]<]minimax[>[</days>]<]minimax[>[</invoke>\n"
            ']<]minimax[>[<invoke name="get_weather">]<]minimax[>[<city>Rome]<]mini'
            "max[>[</city>]<]minimax[>[</invoke>\n"
            "]<]minimax[>[</tool_call>"
        ),
    ),
    ("llama.cpp/MiniMax-M3.jinja", "types"): (
        "oke>\n]<]minimax[>[</tool_call>[e~[\n]~b]user\nUSER[e~[\n]~b]ai\n",
        (
            "</mm:think>]<]minimax[>[<tool_call>\n"
            ']<]minimax[>[<invoke name="set_opts">]<]minimax[>[<flag>true]<]minimax'
            "[>[</flag>]<]minimax[>[<tags>]<]minimax[>[<item>a]<]minimax[>[</item>]"
            "<]minimax[>[<item>b c]<]minimax[>[</item>]<]minimax[>[</tags>]<]minima"
            "x[>[<cfg>]<]minimax[>[<a>1]<]minimax[>[</a>]<]minimax[>[<b>x y]<]minim"
            "ax[>[</b>]<]minimax[>[</cfg>]<]minimax[>[<ratio>0.5]<]minimax[>[</rati"
            "o>]<]minimax[>[</invoke>\n"
            "]<]minimax[>[</tool_call>"
        ),
    ),
    ("llama.cpp/MiniMax-M3.jinja", "reasoning"): (
        "oke>\n]<]minimax[>[</tool_call>[e~[\n]~b]user\nUSER[e~[\n]~b]ai\n",
        (
            "<mm:think>THINK</mm:think>]<]minimax[>[<tool_call>\n"
            ']<]minimax[>[<invoke name="get_weather">]<]minimax[>[<city>Paris]<]min'
            "imax[>[</city>]<]minimax[>[<days>3]<]minimax[>[</days>]<]minimax[>[</invoke>\n"
            "]<]minimax[>[</tool_call>"
        ),
    ),
    ("llama.cpp/MiniMax-M3.jinja", "prose"): (
        "oke>\n]<]minimax[>[</tool_call>[e~[\n]~b]user\nUSER[e~[\n]~b]ai\n",
        (
            "</mm:think>Let me check.]<]minimax[>[<tool_call>\n"
            ']<]minimax[>[<invoke name="get_weather">]<]minimax[>[<city>Paris]<]min'
            "imax[>[</city>]<]minimax[>[<days>3]<]minimax[>[</days>]<]minimax[>[</invoke>\n"
            "]<]minimax[>[</tool_call>"
        ),
    ),
    ("llama.cpp-upstream/GigaChat3.5.jinja", "one"): (
        "]<|message_sep|>\n\nassistant<|role_sep|>\n",
        (
            "<｜GCML｜tool_calls>\n"
            '<｜GCML｜invoke name="get_weather">\n'
            '<｜GCML｜parameter name="city" string="true">Paris</｜GCML｜parameter>\n'
            '<｜GCML｜parameter name="days" string="false">3</｜GCML｜parameter>\n'
            "</｜GCML｜invoke>\n"
            "</｜GCML｜tool_calls>"
        ),
    ),
    ("llama.cpp-upstream/GigaChat3.5.jinja", "two"): (
        "]<|message_sep|>\n\nassistant<|role_sep|>\n",
        (
            "<｜GCML｜tool_calls>\n"
            '<｜GCML｜invoke name="get_weather">\n'
            '<｜GCML｜parameter name="city" string="true">Paris</｜GCML｜parameter>\n'
            '<｜GCML｜parameter name="days" string="false">3</｜GCML｜parameter>\n'
            "</｜GCML｜invoke>\n"
            '<｜GCML｜invoke name="get_weather">\n'
            '<｜GCML｜parameter name="city" string="true">Rome</｜GCML｜parameter>\n'
            "</｜GCML｜invoke>\n"
            "</｜GCML｜tool_calls>"
        ),
    ),
    ("llama.cpp-upstream/GigaChat3.5.jinja", "types"): (
        "]<|message_sep|>\n\nassistant<|role_sep|>\n",
        (
            "<｜GCML｜tool_calls>\n"
            '<｜GCML｜invoke name="set_opts">\n'
            '<｜GCML｜parameter name="flag" string="false">true</｜GCML｜parameter>\n'
            '<｜GCML｜parameter name="tags" string="false">["a", "b c"]</｜GCML｜parameter>\n'
            '<｜GCML｜parameter name="cfg" string="false">{"a": 1, "b": "x y"}'
            "</｜GCML｜parameter>\n"
            '<｜GCML｜parameter name="ratio" string="false">0.5</｜GCML｜parameter>\n'
            "</｜GCML｜invoke>\n"
            "</｜GCML｜tool_calls>"
        ),
    ),
    ("llama.cpp-upstream/GigaChat3.5.jinja", "reasoning"): (
        "]<|message_sep|>\n\nassistant<|role_sep|>\n",
        (
            "<think>THINK</think>\n"
            "\n"
            "<｜GCML｜tool_calls>\n"
            '<｜GCML｜invoke name="get_weather">\n'
            '<｜GCML｜parameter name="city" string="true">Paris</｜GCML｜parameter>\n'
            '<｜GCML｜parameter name="days" string="false">3</｜GCML｜parameter>\n'
            "</｜GCML｜invoke>\n"
            "</｜GCML｜tool_calls>"
        ),
    ),
    ("llama.cpp-upstream/GigaChat3.5.jinja", "prose"): (
        "]<|message_sep|>\n\nassistant<|role_sep|>\n",
        (
            "Let me check.\n"
            "\n"
            "<｜GCML｜tool_calls>\n"
            '<｜GCML｜invoke name="get_weather">\n'
            '<｜GCML｜parameter name="city" string="true">Paris</｜GCML｜parameter>\n'
            '<｜GCML｜parameter name="days" string="false">3</｜GCML｜parameter>\n'
            "</｜GCML｜invoke>\n"
            "</｜GCML｜tool_calls>"
        ),
    ),
    ("llama.cpp/meetkai-functionary-medium-v3.2.jinja", "one"): (
        "<|start_header_id|>assistant<|end_header_id|>\n\n>>>",
        ('get_weather\n{"city": "Paris", "days": 3}'),
    ),
    ("llama.cpp/meetkai-functionary-medium-v3.2.jinja", "two"): (
        "<|start_header_id|>assistant<|end_header_id|>\n\n>>>",
        ('get_weather\n{"city": "Paris", "days": 3}>>>get_weather\n{"city": "Rome"}'),
    ),
    ("llama.cpp/meetkai-functionary-medium-v3.2.jinja", "types"): (
        "<|start_header_id|>assistant<|end_header_id|>\n\n>>>",
        (
            "set_opts\n"
            '{"flag": true, "tags": ["a", "b c"], '
            '"cfg": {"a": 1, "b": "x y"}, "ratio": 0.5}'
        ),
    ),
    ("llama.cpp/meetkai-functionary-medium-v3.2.jinja", "prose"): (
        "<|start_header_id|>assistant<|end_header_id|>\n\n>>>",
        ('all\nLet me check.>>>get_weather\n{"city": "Paris", "days": 3}'),
    ),
}


def cases_for(fmt: str) -> list[tuple[str, str]]:
    """The ``(template, case)`` keys of the renders that ``fmt`` reads."""
    return [k for k in RENDERED if FORMAT_OF[k[0]] == fmt]
