"""Engines toolmask plugs into instead of rewriting them. One subpackage per engine, each
behind its own extra: :mod:`toolmask.integrations.vllm` (extra ``vllm``). Importing this
package imports no engine."""
