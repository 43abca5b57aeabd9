"""Which overloads some Python code calls: the dispatch recorder and the model census
(``conformance trace``); what each decomposed overload's compiled graph calls
(``decompositions``, traced on drawn calls: ``conformance coverage --decompositions``). May
import core and inputs.
"""
