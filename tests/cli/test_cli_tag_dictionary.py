"""``learn --label upos+feats`` and ``--tag-dictionary``: a pruned chain from the command line."""

from sklearn_struct.cli import main
from sklearn_struct.persistence import load_model
from sklearn_struct.structures import ChainStructure, PrunedChainStructure

ROWS = [[("The", "DET", "Definite=Def|PronType=Art"), ("cat", "NOUN", "Number=Sing"),
         ("sat", "VERB", "Mood=Ind|Tense=Past|VerbForm=Fin")],
        [("The", "DET", "Definite=Def|PronType=Art"), ("cats", "NOUN", "Number=Plur"),
         ("sat", "VERB", "Mood=Ind|Tense=Past|VerbForm=Fin"), (".", "PUNCT", "_")]]


def _conllu(path):
    lines = []
    for n, sentence in enumerate(ROWS):
        lines.append(f"# sent_id = {n}")
        for i, (form, upos, feats) in enumerate(sentence):
            lines.append(f"{i + 1}\t{form}\t_\t{upos}\t_\t{feats}\t{0 if i == 0 else 1}\t"
                         f"{'root' if i == 0 else 'dep'}\t_\t_")
        lines.append("")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_upos_feats_with_a_tag_dictionary(tmp_path, capsys):
    path = _conllu(tmp_path / "tiny.conllu")
    model = tmp_path / "model.npz"
    assert main(["learn", str(path), "--format", "conllu", "--label", "upos+feats",
                 "--tag-dictionary", "on", "--min-count", "2", "--C", "10",
                 "-o", str(model)]) == 0
    assert "tag dictionary: 5 labels" in capsys.readouterr().out
    _, _, objects = load_model(model)
    estimator = objects["estimator"]
    assert isinstance(estimator.structure_, PrunedChainStructure)
    assert "DET|Definite=Def|PronType=Art" in estimator.classes_.tolist()
    # "The" and "sat" are seen twice: one candidate each; the others take the rare words'
    allowed = estimator.structure_.allowed_labels
    assert sorted(allowed.sum(axis=1).tolist()) == [1, 1, 3, 3, 3, 3]
    tagged = tmp_path / "tagged.conllu"
    assert main(["tag", str(model), str(path), "-o", str(tagged), "--format", "conllu"]) == 0
    assert tagged.read_text() == path.read_text()  # UPOS and FEATS written back, all right


def test_auto_keeps_the_exact_chain_for_few_labels(tmp_path, capsys):
    path = _conllu(tmp_path / "tiny.conllu")
    model = tmp_path / "model.npz"
    assert main(["learn", str(path), "--format", "conllu", "-o", str(model)]) == 0
    assert "tag dictionary" not in capsys.readouterr().out
    assert isinstance(load_model(model)[2]["estimator"].structure_, ChainStructure)


def test_tag_dictionary_option_errors(tmp_path, capsys):
    path = str(_conllu(tmp_path / "tiny.conllu"))
    assert main(["learn", path, "--format", "conllu", "--label", "head", "--min-count", "2",
                 "-o", "m"]) == 2
    assert "--tag-dictionary and --min-count are for taggers" in capsys.readouterr().err
    assert main(["learn", path, "--format", "conllu", "--tag-dictionary", "off",
                 "--min-count", "2", "-o", "m"]) == 2
    assert "which --tag-dictionary off turns off" in capsys.readouterr().err
    assert main(["learn", path, "--format", "conllu", "--label", "upos+feats",
                 "--inputs", "form,upos", "-o", "m"]) == 2
    assert "upos is the label" in capsys.readouterr().err
