"""The Brazilian Portuguese grammar: the words the router reads pt-BR turns with.

Words are written here with their accents and read without them too (every turn and every word is
folded: "não" and "nao", "estórne" and "estorne" are one word). Lists are words separated by white
space, `_` joining the words of a phrase. Verbs are listed by their infinitive; the forms a request
uses are made from it -- the imperative of "você" (estorne, verifique), the imperative of "tu" as
Brazilians use it (estorna), the infinitive after "pode", "quero", "preciso" (estornar), the gerund
and the plural imperative -- and the participles and pasts, which are never actions ("estornado" is
a state an order is in).

European Portuguese is not this grammar. A turn is told apart as pt-PT, and left unread, where it
says something Brazilian Portuguese does not: a word or spelling of Portugal (`PT_PT`: encomenda,
utilizador, facturação, contacto, equipa, telemóvel, "se faz favor", ...), the "tu" forms Portugal
uses to ask ("podes", "queres", "consegues"), "estar a" + infinitive ("estou a ver"), or a "tu"
imperative with an enclitic pronoun ("mostra-me", "envia-me"; Brazil writes "me mostra", or
"mostre-me" in formal writing, which is read). Beyond these, any word the pt-BR grammar, the
catalogue or the vocabulary file does not know makes the turn unread, so a European turn is never
guessed at. "Reembolsar" is left out on purpose: both varieties use it, but it is the verb Portugal
refunds with, and "reembolse a encomenda" must not be read; Brazilian turns say "estorne" or
"devolva", and an organisation whose people say "reembolse" adds it in its vocabulary file.
"""

from __future__ import annotations

import re

from .lexicon import READ, SEND, WRITE, Entry, Lexicon, items
from .text import fold

LANGUAGE = "pt-BR"

FUNCTION = """
o a os as um uma uns umas de do da dos das em no na nos nas num numa por pelo pela pelos pelas
para pra pro pros pras com sem sobre entre ate até desde apos após ao aos à às
e ou mas porem porém entao então que se quando onde como qual quais
me mim meu minha meus minhas te ti seu sua seus suas nosso nossa nossos nossas
voce você vc vcs voces vocês ele ela eles elas lhe lhes nós a_gente
isso isto esse essa esses essas este esta estes estas aquele aquela aqueles aquelas aquilo
ai aí aqui ali la lá ja já agora ainda tambem também so só apenas mesmo mesma logo
por_favor porfavor pf pfv pfvr porfa favor obrigado obrigada obg brigado valeu vlw grato grata
oi ola olá opa eai e_ai bom_dia boa_tarde boa_noite tudo_bem tudo_bom beleza blz
ok okay tá ta certo entao beleza
é e eh foi era ser sao são está esta estao estão estava fica ficou tem ter tenho temos tinha
há houve vai vou vamos ir
algum alguma alguns algumas outro outra outros outras todo toda mais menos muito muita pouco
coisa coisas alguma_coisa
urgente rapidinho rápido rapido imediatamente hj hoje_mesmo assim
atual atuais ultimo último ultima última ultimos últimos ultimas últimas novo nova primeiro primeira
informacao informação informacoes informações detalhe detalhes dados
sim nao_sei tipo ne né hein
numero número n n. nº no.
qual_e qual_é qual_o
porque pois passada passado copia cópia copias cópias
foram foi sido sendo estava estavam ficou ficaram teve tiveram tem tenho fez fizeram
cadê cade kd quem recente recentes mais_recentes novos novas dúvida duvida uma_dúvida uma_duvida
pergunta_rápida pergunta_rapida cuidando cuida
"""
# Palavras do dia a dia em volta de um pedido -- saudações, agradecimentos, despedidas, desculpas,
# enchimento -- lidas como o que são: nada. An organisation's own words go in its vocabulary file.
COURTESY = """
com_licença com_licenca licença licenca desculpa desculpe desculpa_incomodar desculpe_incomodar
desculpa_o_incômodo desculpa_o_incomodo desculpe_o_incômodo desculpe_o_incomodo foi_mal
abraço abraco abraços abracos abs att atenciosamente grande_abraço grande_abraco um_abraço
um_abraco
desde_já_agradeço desde_ja_agradeco desde_já_obrigado desde_ja_obrigado agradeço agradeco
agradecido agradecida obrigadão obrigadao muito_obrigado muito_obrigada
gente oi_gente olá_gente ola_gente td_bem tdb tudo_certo tudo_tranquilo tranquilo suave
ótimo otimo perfeito show_de_bola legal joia jóia
quando_puder se_puder se_possível se_possivel sem_pressa
tenha_um_bom_dia bom_trabalho bom_fim_de_semana
espero_que_esteja_tudo_bem espero_que_esteja_bem espero_que_estejam_bem
espero_que_você_esteja_bem espero_que_voce_esteja_bem espero_que_estejam_todos_bem
valeu_demais obrigado_demais obrigada_demais muito_obrigado_mesmo
obrigado_pela_ajuda obrigada_pela_ajuda valeu_pela_ajuda pela_ajuda
no_aguardo fico_no_aguardo tô_no_aguardo to_no_aguardo aguardo_retorno aguardo_o_retorno
cliente_esperando cliente_aguardando o_cliente_está_esperando o_cliente_esta_esperando
de_volta
"""
HEAD_COURTESY = ""
# A light verb with a particle later in the request that makes it an action: "passa R$ 35 no
# cartão" charges (and "me passa o pedido" still shows it). verb forms: (particle words, action).
PARTICLE_VERBS = {
    "passa passe passar passem passando": (
        ("no cartao", "charge"), ("no credito", "charge"), ("no debito", "charge"),
    ),
}  # fmt: skip
# Numbers written as words ("os cinco últimos emails", "dez reais"); "um" and "uma" are left out,
# they are articles.
NUMBER_WORDS = {
    "dois": 2, "duas": 2, "tres": 3, "três": 3, "quatro": 4, "cinco": 5, "seis": 6, "sete": 7,
    "oito": 8, "nove": 9, "dez": 10, "onze": 11, "doze": 12, "quinze": 15, "vinte": 20,
    "trinta": 30, "quarenta": 40, "cinquenta": 50, "cem": 100,
}  # fmt: skip
MONEY_WORDS = "reais real"
DETERMINERS = """
o a os as um uma uns umas do da dos das no na nos nas meu minha meus minhas seu sua seus suas
esse essa este esta nosso nossa pelo pela ao
"""
MODALS = """
por_favor pf pfv pfvr porfa favor pode poderia podia consegue conseguiria quero queria
gostaria gostaria_de preciso precisa precisamos precisava da_pra dá_pra daria_pra tem_como
quer querem queremos
vc você voce me eu nos a_gente vamos bora
"""
NEGATIONS = "nao não nunca jamais nem negativo pare parem"
# At the head of a turn, "para" is "stop" ("para o estorno do pedido 4411"), not "for".
HEAD_NEGATIONS = "para"
# At the head of a turn, "conta" is "count" ("conta as OS fechadas"), not the noun "account".
HEAD_COMPUTE = "conta"
QUESTIONS = """
como_faco como_faço como_eu_faco como_eu_faço como_faz como_se_faz como_posso como_eu_posso
por_que porque_e por_quê pq_que por_que_o por_que_a o_que_acontece e_possivel é_possível
da_para_fazer explique explica o_que_significa qual_a_politica qual_a_política
como_funciona como_funcionam como_eu como_que como_a_gente como_se como_devo como_consigo
"""
COMPUTE = """
tem_mais tem_menos com_mais com_menos o_maior a_maior o_menor a_menor mais_de menos_de
total soma somar some média media contar conte quantos quantas quanto_no_total no_total ao_todo
numero_de número_de maior menor calcular calcule calcula somando totalizar
"""
ALL = "todos todas todo_o toda_a tudo todos_os todas_as cada"
ID_CUES = "numero número nº n n. no. # id codigo código cod"
YES = """
sim s pode ok okay confirmo confirma confirmado claro isso certo pode_ser pode_sim manda
manda_ver vai faz pode_fazer sim_por_favor com_certeza beleza fechado positivo isso_mesmo
"""
NO = """
nao não n cancela cancele pare para espera deixa deixa_pra_la deixa_pra_lá nem negativo
não_obrigado nao_obrigado agora_nao agora_não
"""
WEAK = "abrir abra abre abram abrindo"
# A tag that ends a question about a state ("foi pago ou não?"); anywhere else, a negation.
TAGS = "ou_não ou_nao sim_ou_não sim_ou_nao"
# Words that point back at an earlier request: the turn does not say what to do by itself.
REFER = """
mesma_coisa a_mesma_coisa o_mesmo a_mesma igual igualzinho do_mesmo_jeito o_outro a_outra
os_outros as_outras
"""
PLURAL_DETERMINERS = """
os as uns umas dos das nos nas aos meus minhas seus suas esses essas estes estas nossos nossas
todos todas quais pelos pelas quantos quantas numero_de número_de
"""
ID_NOUNS = {"os": "order"}
# "marque a OS 742 como concluída": these verbs, with `como` and a state, mark.
MARK_VERBS = "marque marca marcar marquem deixe deixa deixar coloque coloca colocar"
MARK_WORDS = "como"
SEPARATORS = "e depois entao então tambem também"
# Words that ask for the whole of an amount: only with one of them is a write's amount taken from
# a read's result ("estorne o valor total do pedido 4411"); else it is asked for.
WHOLE = """
integral inteiro inteira completo completa valor_total valor_integral valor_cheio total_do_pedido
estorno_total estorno_integral estorno_completo todo_o_valor o_valor_todo
"""
AUXILIARIES = ""

DATES = {
    "hoje": 0,
    "amanha": 1,
    "amanhã": 1,
    "ontem": -1,
    "anteontem": -2,
    "depois_de_amanha": 2,
    "depois_de_amanhã": 2,
}
WEEKDAYS = {
    "segunda": 0, "segunda-feira": 0, "segunda_feira": 0, "terca": 1, "terça": 1,
    "terca-feira": 1, "terça-feira": 1, "quarta": 2, "quarta-feira": 2, "quinta": 3,
    "quinta-feira": 3, "sexta": 4, "sexta-feira": 4, "sabado": 5, "sábado": 5, "domingo": 6,
}  # fmt: skip
MONTHS = {
    "janeiro": 1, "jan": 1, "fevereiro": 2, "fev": 2, "marco": 3, "março": 3, "mar": 3,
    "abril": 4, "abr": 4, "maio": 5, "mai": 5, "junho": 6, "jun": 6, "julho": 7, "jul": 7,
    "agosto": 8, "ago": 8, "setembro": 9, "set": 9, "outubro": 10, "out": 10, "novembro": 11,
    "nov": 11, "dezembro": 12, "dez": 12,
}  # fmt: skip
DATE_BACK = "desde passada passado ultima última ultimo último a_partir_de depois_de"

# concept: (family, infinitives, extra forms read as the verb)
VERBS: dict[str, tuple[str, str, str]] = {
    "show": (
        READ,
        "mostrar ver consultar checar verificar conferir olhar exibir buscar puxar ler "
        "visualizar acessar",
        "dar_uma_olhada da_uma_olhada dá_uma_olhada de_uma_olhada dê_uma_olhada",
    ),
    "list": (READ, "listar relacionar", ""),
    "search": (READ, "procurar pesquisar localizar achar encontrar", ""),
    "refund": (WRITE, "estornar devolver ressarcir", "devolve_o_dinheiro"),
    "charge": (WRITE, "cobrar debitar faturar", ""),
    "close": (
        WRITE,
        "fechar encerrar finalizar concluir baixar",
        "dar_baixa da_baixa dá_baixa de_baixa dê_baixa dar_baixa_na dar_baixa_em",
    ),
    "request": (WRITE, "solicitar pedir requisitar", "abrir_um_pedido abrir_uma_solicitacao"),
    "cancel": (WRITE, "cancelar anular", ""),
    "create": (WRITE, "criar cadastrar adicionar incluir", ""),
    "update": (WRITE, "atualizar alterar mudar editar modificar corrigir trocar", ""),
    "delete": (WRITE, "apagar excluir deletar remover", ""),
    "save": (WRITE, "salvar anotar registrar guardar gravar", ""),
    "pay": (WRITE, "pagar quitar", ""),
    "approve": (WRITE, "aprovar autorizar aceitar", ""),
    "reject": (WRITE, "rejeitar recusar negar reprovar", ""),
    "assign": (WRITE, "atribuir designar", ""),
    "schedule": (WRITE, "agendar marcar reagendar", ""),
    "send": (
        SEND,
        "enviar mandar encaminhar publicar postar compartilhar notificar avisar disparar reenviar",
        "manda_por_email mande_por_email",
    ),
}
# Irregular or ambiguous forms, listed by hand: form -> concept (None: the form is left out).
IRREGULAR = {
    "show": "veja ve vê ver vendo vejam leia le lê ler lendo leiam confira confere confiram",
    "close": "conclua conclui concluam",
    "request": "peça peca pede pedir pedindo peçam",
    "refund": "devolva devolve devolvam devolver devolvendo",
}
# Forms a regular verb would make that mean something else here: left out.
NOT_FORMS = frozenset(
    {"conta", "soma", "some", "pedido", "pedidos", "registro", "nota", "lista", "marca",
     "agenda", "baixa", "ato", "pede", "pago", "paga", "pagos", "pagas", "fecho", "estorno",
     "envio", "pagamento", "da", "de", "para", "acha", "acesso"}
)  # fmt: skip
LIGHT = {
    "show": "me_diz me_diga diga diz dizer me_fala fala falar informe informa informar trazer "
    "traga traz pegar pega pegue me_passa passa passe me_da me_dá me_de me_dê saber "
    "chegou chegaram",
    "": "fazer faz faça faca fazendo façam fiz realizar realize realiza efetuar efetue efetua "
    "lançar lança lance lancem lançando",
    "mark": "marcar_como marque_como marca_como deixar_como deixe_como colocar_como coloque_como",
}
MARKED = {"closed": "close", "paid": "pay", "cancelled": "cancel", "refunded": "refund",
          "sent": "send", "charged": "charge"}  # fmt: skip
NOMINAL = {
    "refund": "estorno estornos devolução devolucao devoluções devolucoes ressarcimento "
    "estorno_total estorno_integral estorno_completo dinheiro_de_volta grana_de_volta",
    "charge": "cobrança cobranca cobranças cobrancas débito debito",
    "close": "fechamento encerramento finalização finalizacao conclusão conclusao baixa",
    "request": "solicitação solicitacao solicitações solicitacoes requisição requisicao",
    "cancel": "cancelamento cancelamentos",
    "delete": "exclusão exclusao remoção remocao",
    "update": "atualização atualizacao alteração alteracao mudança mudanca correção correcao",
    "show": "consulta consultas",
    "list": "lista listagem relação relacao",
    "approve": "aprovação aprovacao",
    "schedule": "agendamento",
    "send": "envio envios",
    "create": "cadastro criação criacao",
}
NOUNS: dict[str, tuple[str, str]] = {
    "order": (
        "pedido compra ordem ordem_de_servico ordem_de_serviço ordem_de_servicos",
        "pedidos compras ordens ordens_de_servico ordens_de_serviço",
    ),
    "card": ("cartao cartão cartao_de_credito cartão_de_crédito", "cartoes cartões"),
    "amount": (
        "valor quantia montante preço preco quanto valor_total valor_integral valor_cheio "
        "total_do_pedido",
        "valores quantias",
    ),
    "receipt": ("recibo comprovante", "recibos comprovantes"),
    "invoice": ("fatura nota_fiscal nf boleto", "faturas notas_fiscais boletos"),
    "inbox": (
        "caixa_de_entrada inbox caixa_postal email_novo novo_email mensagem_nova nova_mensagem",
        "emails e-mails mensagens",
    ),
    "email": ("email e-mail endereco_de_email endereço_de_email endereço endereco", "enderecos"),
    "note": (
        "nota observação observacao obs anotação anotacao comentário comentario",
        "notas observações observacoes anotações anotacoes comentários comentarios",
    ),
    "status": ("status situação situacao estado andamento_do", "situações situacoes"),
    "customer": ("cliente comprador compradora", "clientes compradores"),
    "money": ("dinheiro grana", ""),
    "site": ("site local unidade loja filial", "sites locais unidades lojas filiais"),
    "reason": ("motivo razão razao justificativa", "motivos"),
    "message": ("mensagem texto", "textos"),
    "channel": ("canal sala grupo", "canais salas grupos"),
    "team": ("time equipe pessoal galera", "times equipes"),
    "payment": ("pagamento", "pagamentos"),
    "item": ("item produto", "itens produtos"),
    "date": ("data dia", "datas dias"),
    "account": ("conta", "contas"),
    "limit": ("limite maximo máximo", "limites"),
    "id": ("id identificador codigo código", "ids"),
    "assignee": ("responsavel responsável tecnico técnico", "responsaveis responsáveis tecnicos"),
    "priority": ("prioridade", "prioridades"),
}
STATUSES = {
    "open": "aberto aberta abertos abertas em_aberto nao_fechado não_fechado",
    "closed": "fechado fechada fechados fechadas encerrado encerrada encerrados encerradas "
    "finalizado finalizada finalizados finalizadas concluido concluida concluidos concluidas "
    "concluído concluída",
    "paid": "pago paga pagos pagas quitado quitada quitados quitadas",
    "unpaid": "nao_pago não_pago em_atraso pendente_de_pagamento",
    "refunded": "estornado estornada estornados estornadas devolvido devolvida devolvidos",
    "pending": "pendente pendentes aguardando",
    "cancelled": "cancelado cancelada cancelados canceladas",
    "in_progress": "em_andamento em_execucao em_execução em_progresso andando",
    "sent": "enviado enviada enviados enviadas",
    "charged": "cobrado cobrada cobrados cobradas",
    "close_requested": "fechamento_solicitado",
}
# Words and spellings of Portugal that Brazilian Portuguese does not use.
PT_PT = """
encomenda encomendas encomende encomendar telemovel telemóvel telemoveis telemóveis ecra ecrã
utilizador utilizadores utilizadora facturacao facturação factura facturas facturar contacto
contactos contactar contacte equipa equipas registo registos autocarro comboio rapariga fixe
bue bué morada talao talão multibanco montra accao acção accoes acções direccao direcção
actual actualizar actualize actualizado optimo óptimo podes queres tens consegues fazes
sff se_faz_favor faz_favor casa_de_banho pequeno-almoco pequeno-almoço ficheiro ficheiros
gajo miúdo miudo portátil portatil sítio_web descarregar transferência_bancária_nib nib
objectivo projecto exacto recepcao recepção
poderias podias querias gostarias gostavas precisas conseguias conseguirias sabes fazias
"""
# "estar a" + infinitive, and a "tu" imperative with an enclitic pronoun ("mostra-me").
PT_PT_PATTERNS = (
    re.compile(
        r"\b(?:estou|esta|estas|estamos|estao|estava|estavam|esteve) a [a-z]+(?:ar|er|ir)\b"
    ),
)
ENCLITICS = ("-me", "-lhe", "-nos", "-lhes", "-te")

FREE_TEXT_MARKERS = {
    "text": "dizendo falando com_o_texto com_a_mensagem texto: mensagem: que_diz escrito",
    "note": "com_a_nota com_nota com_a_observacao com_a_observação com_observacao "
    "com_observação com_a_obs com_obs nota: obs: observacao: observação: anotando "
    "com_o_comentario com_o_comentário comentario: comentário:",
    "reason": "porque pois por_causa_de por_conta_de com_o_motivo com_motivo motivo: "
    "justificativa: ja_que já_que visto_que pq pq. porq "
    "o_cliente_disse_que cliente_disse_que o_cliente_falou_que cliente_falou_que "
    "o_cliente_diz_que cliente_diz_que a_cliente_disse_que a_cliente_falou_que "
    "a_cliente_diz_que segundo_o_cliente segundo_a_cliente o_cliente_desistiu "
    "a_cliente_desistiu cliente_desistiu o_cliente_reclamou_que a_cliente_reclamou_que "
    "veio_com_defeito chegou_com_defeito com_defeito chegou_quebrado chegou_quebrada "
    "veio_quebrado veio_quebrada chegou_errado veio_errado chegou_atrasado chegou_amassado "
    "chegou_amassada o_produto_veio o_produto_chegou produto_veio produto_chegou o_item_veio "
    "o_item_chegou a_caixa_chegou a_caixa_veio a_entrega_atrasou",
}


def clause_markers(lexicon: Lexicon) -> tuple[tuple[str, str, str], ...]:
    """No pt-BR marker needs a clause after it: "porque", "pq" always open a reason."""
    return ()


def _soften(stem: str, vowel: str) -> str:
    """Spelling changes before `e` (verificar -> verifique, pagar -> pague, começar -> comece)."""
    if vowel == "e":
        if stem.endswith("c"):
            return stem[:-1] + "qu"
        if stem.endswith("g"):
            return stem[:-1] + "gu"
        if stem.endswith("ç"):
            return stem[:-1] + "c"
    if vowel in "ao":
        if stem.endswith("c") and not stem.endswith("qu"):
            return stem[:-1] + "ç"
        if stem.endswith("g"):
            return stem[:-1] + "j"
    return stem


def verb_forms(infinitive: str) -> tuple[list[str], list[str], list[str]]:
    """The request forms, the "tu" imperative forms, and the past forms of a regular verb."""
    stem, ending = infinitive[:-2], infinitive[-2:]
    if ending == "ar":
        imperative = [_soften(stem, "e") + "e", _soften(stem, "e") + "em"]
        tu = [stem + "a"]
        request = [infinitive, stem + "ando", stem + "ar-me", stem + "ar-lhe"]
        past = [stem + s for s in ("ado", "ada", "ados", "adas", "ou", "aram")]
        past.append(_soften(stem, "e") + "ei")
    elif ending == "er":
        imperative = [_soften(stem, "a") + "a", _soften(stem, "a") + "am"]
        tu = [stem + "e"]
        request = [infinitive, stem + "endo"]
        past = [stem + s for s in ("ido", "ida", "idos", "idas", "eu", "eram", "i")]
    else:
        imperative = [_soften(stem, "a") + "a", _soften(stem, "a") + "am"]
        tu = [stem + "e"]
        request = [infinitive, stem + "indo"]
        past = [stem + s for s in ("ido", "ida", "idos", "idas", "iu", "iram", "i")]
    return imperative + request, tu, past


def build() -> Lexicon:
    """The pt-BR lexicon."""
    lex = Lexicon(LANGUAGE)
    put = lex.put
    for word in items(FUNCTION):
        put(word, Entry("function"))
    for word in items(COURTESY):
        put(word, Entry("function"))
    for word in items(DETERMINERS):
        put(word, Entry("determiner"), force=True)
    for word in items(MODALS):
        put(word, Entry("modal"), force=True)
    for word in items(NEGATIONS):
        put(word, Entry("negation"), force=True)
    for phrase in items(QUESTIONS):
        put(phrase, Entry("question"), force=True)
    for phrase in items(COMPUTE):
        put(phrase, Entry("compute"), force=True)
    for phrase in items(ALL):
        put(phrase, Entry("all"), force=True)
    for phrase in items(ID_CUES):
        put(phrase, Entry("id_cue"))
    for phrase in items(WEAK):
        put(phrase, Entry("weak"), force=True)
    for phrase in items(TAGS):
        put(phrase, Entry("tag"), force=True)
    for phrase in items(REFER):
        put(phrase, Entry("refer"), force=True)
    for phrase, offset in DATES.items():
        put(phrase.replace("_", " "), Entry("date", offset=offset), force=True)
    for phrase, day in WEEKDAYS.items():
        put(phrase.replace("_", " "), Entry("date", weekday=day), force=True)
    lex.months.update({fold(name): number for name, number in MONTHS.items()})
    for concept, forms in STATUSES.items():
        for phrase in items(forms):
            put(phrase, Entry("status", concept), force=True)
    for concept, (singular, plural) in NOUNS.items():
        for form in items(singular):
            put(form, Entry("noun", concept))
        for form in items(plural):
            put(form, Entry("noun", concept, plural=True))
    not_forms = {fold(word) for word in NOT_FORMS}
    for concept, (family, infinitives, extra) in VERBS.items():
        lex.verb(concept, family)
        for infinitive in items(infinitives):
            request, tu, past = verb_forms(infinitive)
            for form in request + tu:
                if fold(form) not in not_forms:
                    put(form, Entry("verb", concept))
            for form in past:
                if fold(form) not in not_forms and fold(form) not in lex.words:
                    put(form, Entry("past"))
        for phrase in items(extra):
            put(phrase, Entry("verb", concept), force=True)
    for concept, forms in IRREGULAR.items():
        for form in items(forms):
            if fold(form) not in not_forms:
                put(form, Entry("verb", concept), force=True)
    for concept, forms in LIGHT.items():
        for form in items(forms):
            put(form, Entry("light", concept or None), force=True)
    for concept, forms in NOMINAL.items():
        for form in items(forms):
            old = lex.words.get(fold(form))
            if old is None or old.role in ("past", "verb", "noun"):
                put(form, Entry("nominal", concept), force=True)
    for word in items(PT_PT):
        put(word, Entry("pt_pt"), force=True)
    lex.yes.update(fold(word) for word in items(YES))
    lex.no.update(fold(word) for word in items(NO))
    return lex


def tu_imperatives(lex: Lexicon | None = None) -> frozenset[str]:
    """The "tu" imperative forms of the grammar's verbs (for telling "mostra-me" apart)."""
    out: set[str] = set()
    for _family, infinitives, _extra in VERBS.values():
        for infinitive in items(infinitives):
            _request, tu, _past = verb_forms(infinitive)
            out.update(fold(form) for form in tu)
    out.update({"diz", "faz", "da", "traz", "ve", "le", "pede", "devolve", "manda"})
    return frozenset(out)
